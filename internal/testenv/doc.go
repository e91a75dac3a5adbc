// Package testenv gives tests their own stores: the real MariaDB/MySQL and Redis when MYSQL_DSN and
// REDIS_ADDR are set (CI sets them), SQLite and miniredis otherwise. Each call gets a fresh database and a
// fresh key prefix, cleaned up when the test ends, so tests can run in parallel.
package testenv
