// Package testenv gives tests their own stores: the real MariaDB/MySQL and Redis when MYSQL_DSN and
// REDIS_ADDR are set (CI sets them), SQLite and miniredis otherwise; with REDIS_CLUSTER=1 a Redis Cluster of 3
// masters and 3 replicas that the test binary starts for itself (cluster.go; REDIS_CLUSTER_ADDRS names a
// running one instead); with REDIS_SENTINEL=1 a master, a replica and three sentinels it starts likewise, its
// clients asking the sentinels for the master (sentinel_mode.go). Each call gets a fresh database and a fresh
// key prefix, cleaned up when the test ends, so tests can run in parallel. Tests that need servers of their
// own start them here too: a redis-server (with a password, an ACL user or TLS) and a Sentinel setup
// (sentinel.go).
//
// May import: internal/sqlstore, internal/redisstock, go-redis, miniredis, the MySQL driver, database/sql and the standard library
// (testing included); not Temporal. Only _test.go files (and internal/sagatest) may import this package
// (checked by internal/layers).
package testenv
