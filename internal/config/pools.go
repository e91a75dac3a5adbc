package config

import (
	"fmt"
	"strings"
	"time"
)

// maxPool bounds every pool and concurrency setting: a larger number is a typo, not a plan.
const maxPool = 100000

// readPools reads the connection pools and the worker's local-activity concurrency. It runs after
// WORKER_CONCURRENCY is read: the local activities default to it.
func (c *Config) readPools(getenv func(string) string) []error {
	var errs []error
	count := func(name string, dst *int, lo int) {
		if err := readInt(getenv, name, dst, lo, maxPool); err != nil {
			errs = append(errs, err)
		}
	}
	count("MYSQL_MAX_OPEN_CONNS", &c.MySQLMaxOpenConns, 1)
	idleSet := strings.TrimSpace(getenv("MYSQL_MAX_IDLE_CONNS")) != ""
	count("MYSQL_MAX_IDLE_CONNS", &c.MySQLMaxIdleConns, 0)
	if !idleSet && c.MySQLMaxIdleConns > c.MySQLMaxOpenConns {
		// A smaller MYSQL_MAX_OPEN_CONNS alone takes the idle connections down with it.
		c.MySQLMaxIdleConns = c.MySQLMaxOpenConns
	}
	if c.MySQLMaxIdleConns > c.MySQLMaxOpenConns {
		errs = append(errs, fmt.Errorf("MYSQL_MAX_IDLE_CONNS=%d: more than MYSQL_MAX_OPEN_CONNS=%d", c.MySQLMaxIdleConns, c.MySQLMaxOpenConns))
	}
	if v := strings.TrimSpace(getenv("MYSQL_CONN_MAX_LIFETIME")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("MYSQL_CONN_MAX_LIFETIME=%q: want a Go duration of at least 1s, e.g. 30m", v))
		} else {
			c.MySQLConnMaxLifetime = d
		}
	}
	count("REDIS_POOL_SIZE", &c.RedisPoolSize, 1)
	c.WorkerLocalActivityConcurrency = c.WorkerConcurrency
	count("WORKER_LOCAL_ACTIVITY_CONCURRENCY", &c.WorkerLocalActivityConcurrency, 1)
	return errs
}
