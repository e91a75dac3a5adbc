-- Runs once, when the MySQL volume is first initialised (docker-entrypoint-initdb.d). The ordersaga database
-- and its user come from MYSQL_DATABASE / MYSQL_USER in docker-compose.yml; the worker and the starter apply
-- our migrations (schema/mysql) at boot. Temporal gets databases and a user of its own; the temporal-schema
-- service sets up its tables with temporal-sql-tool.
CREATE DATABASE IF NOT EXISTS temporal CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE DATABASE IF NOT EXISTS temporal_visibility CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'temporal'@'%' IDENTIFIED BY 'temporal';
GRANT ALL PRIVILEGES ON temporal.* TO 'temporal'@'%';
GRANT ALL PRIVILEGES ON temporal_visibility.* TO 'temporal'@'%';
FLUSH PRIVILEGES;
