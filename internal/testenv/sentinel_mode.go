package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// The tests' Sentinel setup. REDIS_SENTINEL=1 makes the test binary start one setup of its own (a master, its
// replica and three sentinels: startSentinel), once, on first use, shared by its tests; RedisClient and
// MustOpenRedis then answer with a failover client on it, under a key prefix of the test's own. Its servers
// die with the test binary, as the cluster's do.

// redisMode is the Redis the tests run against, chosen by the environment (redisModeOf).
type redisMode int

const (
	redisMini     redisMode = iota + 1 // a miniredis of each test's own
	redisServer                        // the REDIS_ADDR server
	redisCluster                       // a Redis Cluster (ClusterMode)
	redisSentinel                      // the shared Sentinel setup (SentinelMode)
)

// SentinelMode reports whether the tests run against the test binary's Sentinel setup (REDIS_SENTINEL=1).
func SentinelMode() bool { return os.Getenv("REDIS_SENTINEL") == "1" }

// redisModeOf reads the mode from the variables: a cluster (REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS) or the
// Sentinel setup (REDIS_SENTINEL=1), either over REDIS_ADDR; otherwise the REDIS_ADDR server, or miniredis.
// A cluster and Sentinel together are an error, as is REDIS_SENTINEL set to anything but 1.
func redisModeOf(getenv func(string) string) (redisMode, error) {
	sentinel := getenv("REDIS_SENTINEL")
	if sentinel != "" && sentinel != "1" {
		return 0, fmt.Errorf("REDIS_SENTINEL=%q: want 1 (start a Sentinel setup) or unset", sentinel)
	}
	var cluster string
	for _, v := range []string{"REDIS_CLUSTER", "REDIS_CLUSTER_ADDRS"} {
		if (v == "REDIS_CLUSTER" && getenv(v) == "1") || (v == "REDIS_CLUSTER_ADDRS" && getenv(v) != "") {
			cluster = v
			break
		}
	}
	switch {
	case cluster != "" && sentinel != "":
		return 0, fmt.Errorf("%s and REDIS_SENTINEL are both set: the tests run against a cluster or a Sentinel setup, set one", cluster)
	case cluster != "":
		return redisCluster, nil
	case sentinel != "":
		return redisSentinel, nil
	case getenv("REDIS_ADDR") != "":
		return redisServer, nil
	}
	return redisMini, nil
}

// startedSentinel is the test binary's Sentinel setup, started on first use (SharedSentinel).
var startedSentinel = sync.OnceValues(func() (*Sentinel, error) {
	dir, err := os.MkdirTemp("", "ordersaga-redis-sentinel-")
	if err != nil {
		return nil, err
	}
	if err := removeWhenGone(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return startSentinel(dir)
})

// SharedSentinel returns the test binary's Sentinel setup, starting it on first use: its servers in a
// temporary directory removed once the binary has ended, never stopped by a test (they die with the binary).
// It fails the test outside REDIS_SENTINEL=1 mode, or when the setup cannot be started.
func SharedSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	if !SentinelMode() {
		tb.Fatal("no shared Sentinel setup: set REDIS_SENTINEL=1")
	}
	s, err := startedSentinel()
	if err != nil {
		tb.Fatalf("redis sentinel: %v", err)
	}
	return s
}
