package testenv

import (
	"context"
	"fmt"
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

var sharedCluster struct {
	once sync.Once
	c    *Cluster
	err  error
}

// SharedCluster returns the tests' cluster, starting it on first use when REDIS_CLUSTER=1. It fails the test
// when neither REDIS_CLUSTER=1 nor REDIS_CLUSTER_ADDRS is set, or the cluster cannot be started. A started
// cluster lives as long as the test binary (its servers die with it).
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if !ClusterMode() {
		tb.Fatal("no Redis Cluster: set REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS")
	}
	sharedCluster.once.Do(func() {
		if seeds := os.Getenv("REDIS_CLUSTER_ADDRS"); seeds != "" {
			sharedCluster.c = redislab.Existing(strings.Split(seeds, ","))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
		defer cancel()
		sharedCluster.c, sharedCluster.err = redislab.Start(ctx, clusterMasters, 1)
	})
	if sharedCluster.err != nil {
		tb.Fatalf("redis cluster: %v", sharedCluster.err)
	}
	return sharedCluster.c
}

// spawnChild starts cmd so that it dies with the test binary (redislab.SpawnChild: Pdeathsig from one locked
// thread).
func spawnChild(cmd *exec.Cmd) error { return redislab.SpawnChild(cmd) }

// removeWhenGone removes dir once the test binary has ended (redislab.RemoveWhenGone).
func removeWhenGone(dir string) error { return redislab.RemoveWhenGone(dir) }

// clusterClient is RedisClient on the cluster: a client of the test's own and a fresh key prefix, whose keys
// are deleted from every master at cleanup.
func clusterClient(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	rdb := SharedCluster(tb).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		rdb.Close()
		tb.Fatalf("redis cluster: %v", err)
	}
	return rdb, ownPrefix(tb, rdb)
}

// deleteMatching deletes the keys matching pattern on a single server, or on every master of a cluster
// (SCAN, then one DEL per key: keys of one node may lie in different slots), and returns how many it deleted.
func deleteMatching(ctx context.Context, rdb redis.UniversalClient, pattern string) (int, error) {
	var mu sync.Mutex
	total := 0
	del := func(ctx context.Context, node redis.Cmdable) error {
		var keys []string
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(keys) == 0 {
			return nil
		}
		cmds, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Del(ctx, k)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delete %s: %w", pattern, err)
		}
		n := 0
		for _, c := range cmds {
			n += int(c.(*redis.IntCmd).Val())
		}
		mu.Lock()
		total += n
		mu.Unlock()
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
	} else {
		err = del(ctx, rdb)
	}
	return total, err
}

// ownPrefix is a fresh key prefix of the test's own on rdb: its keys are deleted (on every master of a
// cluster) and rdb closed when the test ends.
func ownPrefix(tb testing.TB, rdb redis.UniversalClient) string {
	prefix := "t" + RandomID(6) + ":"
	tb.Cleanup(func() {
		_, _ = deleteMatching(context.Background(), rdb, redisstock.GlobEscape(prefix)+"*")
		rdb.Close()
	})
	return prefix
}
