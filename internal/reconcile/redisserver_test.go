package reconcile_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// quickClient is a client of the redis-server at addr that gives up quickly, so that a stopped server shows as
// unreachable at once.
func quickClient(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128, MaxRetries: 1,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
