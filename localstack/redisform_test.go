package main

import (
	"io"
	"testing"

	"github.com/ordersaga/ordersaga/internal/config"
)

// TestOptions_ARealRedisOfAnyFormReplacesTheEmbeddedOne: REDIS_ADDR, REDIS_CLUSTER_ADDRS or
// REDIS_SENTINEL_ADDRS (with its master) makes the stack use that Redis, in that form, and start no embedded
// one; none of them: the embedded Redis on --redis-port.
func TestOptions_ARealRedisOfAnyFormReplacesTheEmbeddedOne(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		form     config.RedisForm
		external bool
	}{
		{nil, config.RedisServer, false},
		{map[string]string{"REDIS_ADDR": "10.0.0.5:6379"}, config.RedisServer, true},
		{map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.5:7000,10.0.0.6:7000"}, config.RedisCluster, true},
		{map[string]string{"REDIS_SENTINEL_ADDRS": "10.0.0.5:26379", "REDIS_SENTINEL_MASTER": "m"}, config.RedisSentinel, true},
	} {
		o, err := parseOptions([]string{"localstack"}, func(k string) string { return tc.env[k] }, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if form, _ := o.cfg.RedisForm(); form != tc.form || o.externalRedis != tc.external {
			t.Errorf("%v: form %s, external %v; want %s, %v", tc.env, form, o.externalRedis, tc.form, tc.external)
		}
	}
}
