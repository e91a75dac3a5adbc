package testenv

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
)

// The tests' Redis Cluster. REDIS_CLUSTER=1 makes the test binary start a cluster of its own, once, on first
// use: six redis-servers (3 masters, 3 replicas) on free ports in a temporary directory. REDIS_CLUSTER_ADDRS
// (comma-separated seeds) names a running cluster instead. Either way RedisClient and MustOpenRedis answer
// with a *redis.ClusterClient on it, under a key prefix of the test's own.

// clusterMasters is how many masters the started cluster has; each has one replica.
const clusterMasters = 3

// clusterReadyTimeout bounds the wait for a started or restarted cluster to cover every slot.
const clusterReadyTimeout = redislab.ReadyTimeout

// ClusterMode reports whether the tests run against a Redis Cluster (REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS).
func ClusterMode() bool {
	return os.Getenv("REDIS_CLUSTER") == "1" || os.Getenv("REDIS_CLUSTER_ADDRS") != ""
}

// Cluster is the Redis Cluster the tests run against (internal/redislab runs its processes). A cluster this
// process started can lose a node (Kill, a SIGKILL) and get it back (Restart, on its port and with its
// nodes.conf, so it rejoins): what a failover test needs. A cluster named by REDIS_CLUSTER_ADDRS is only used,
// never stopped.
type Cluster = redislab.Cluster

// Topology is what one node's CLUSTER NODES says: the masters (with slots) and the replicas, by address.
type Topology = redislab.Topology

// startedCluster is the test binary's cluster, started or named on first use (SharedCluster).
var startedCluster = sync.OnceValues(func() (*Cluster, error) {
	if seeds := os.Getenv("REDIS_CLUSTER_ADDRS"); seeds != "" {
		return redislab.Existing(strings.Split(seeds, ",")), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	return redislab.Start(ctx, clusterMasters, 1)
})

// SharedCluster returns the tests' cluster, starting it on first use when REDIS_CLUSTER=1. It fails the test
// when neither REDIS_CLUSTER=1 nor REDIS_CLUSTER_ADDRS is set, or the cluster cannot be started. A started
// cluster lives as long as the test binary (its servers die with it).
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if !ClusterMode() {
		tb.Fatal("no Redis Cluster: set REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS")
	}
	c, err := startedCluster()
	if err != nil {
		tb.Fatalf("redis cluster: %v", err)
	}
	return c
}

// spawnChild starts cmd so that it dies with the test binary (redislab.SpawnChild: Pdeathsig from one locked
// thread).
func spawnChild(cmd *exec.Cmd) error { return redislab.SpawnChild(cmd) }

// removeWhenGone removes dir once the test binary has ended (redislab.RemoveWhenGone).
func removeWhenGone(dir string) error { return redislab.RemoveWhenGone(dir) }

// ownClient is RedisClient's answer on a cluster or a Sentinel setup: rdb, a client of the test's own, once it
// answers (on every master of a cluster), with a fresh key prefix whose keys are deleted at cleanup.
func ownClient(tb testing.TB, what string, rdb redis.UniversalClient) (redis.UniversalClient, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
	} else {
		err = rdb.Ping(ctx).Err()
	}
	if err != nil {
		rdb.Close()
		tb.Fatalf("%s: %v", what, err)
	}
	return rdb, ownPrefix(tb, rdb)
}

// ownPrefix is a fresh key prefix of the test's own on rdb: its keys are deleted (on every master of a
// cluster) and rdb closed when the test ends.
func ownPrefix(tb testing.TB, rdb redis.UniversalClient) string {
	prefix := "t" + RandomID(6) + ":"
	tb.Cleanup(func() {
		_, _ = redisstock.DeleteMatching(context.Background(), rdb, redisstock.GlobEscape(prefix)+"*")
		rdb.Close()
	})
	return prefix
}
