#!/bin/sh
# Runs once, when the MySQL volume is first initialised (docker-entrypoint-initdb.d). The ordersaga database
# and its user come from MYSQL_DATABASE / MYSQL_USER / MYSQL_PASSWORD in docker-compose.yml; the worker and
# the starter apply our migrations (schema/mysql) at boot. Temporal gets databases and a user of its own,
# with the password of TEMPORAL_DB_PASSWORD (from .env, never from a file in the repository); the
# temporal-schema service sets up its tables with temporal-sql-tool.
set -eu
: "${MYSQL_ROOT_PASSWORD:?}" "${TEMPORAL_DB_PASSWORD:?set TEMPORAL_DB_PASSWORD in .env}"
# A single quote would end the SQL string literal: double it.
pw=$(printf '%s' "$TEMPORAL_DB_PASSWORD" | sed "s/'/''/g")
mysql --protocol=socket -uroot -p"$MYSQL_ROOT_PASSWORD" <<SQL
CREATE DATABASE IF NOT EXISTS temporal CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE DATABASE IF NOT EXISTS temporal_visibility CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'temporal'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON temporal.* TO 'temporal'@'%';
GRANT ALL PRIVILEGES ON temporal_visibility.* TO 'temporal'@'%';
FLUSH PRIVILEGES;
SQL
