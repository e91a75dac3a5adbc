// Package testenv gives tests their own stores: the real MariaDB/MySQL and Redis when MYSQL_DSN and
// REDIS_ADDR are set (CI sets them), SQLite and miniredis otherwise. Each call gets a fresh database and a
// fresh key prefix, cleaned up when the test ends, so tests can run in parallel.
//
// May import: internal/sqlstore, internal/redisstock, go-redis, miniredis, the MySQL driver, database/sql and the standard library
// (testing included); not Temporal. Only _test.go files (and internal/sagatest) may import this package
// (checked by internal/layers).
package testenv
