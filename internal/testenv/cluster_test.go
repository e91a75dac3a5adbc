package testenv_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/redis/go-redis/v9"
)

func needCluster(t *testing.T) {
	t.Helper()
	if !testenv.ClusterMode() {
		t.Skip("needs a Redis Cluster: REDIS_CLUSTER=1 or REDIS_CLUSTER_ADDRS")
	}
}

// TestClusterHasThreeMastersAndThreeReplicas: the cluster the tests get has every slot covered by 3 masters,
// each with a replica, and RedisClient answers with a cluster client on it.
func TestClusterHasThreeMastersAndThreeReplicas(t *testing.T) {
	needCluster(t)
	c := testenv.SharedCluster(t)
	ctx := t.Context()
	top, err := c.Topology(ctx, c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Masters) != 3 || len(top.Replicas) != 3 {
		t.Fatalf("masters %v, replicas %v; want 3 of each", top.Masters, top.Replicas)
	}
	rdb, _ := testenv.RedisClient(t)
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("RedisClient = %T, want *redis.ClusterClient", rdb)
	}
	if !testenv.RealRedis() {
		t.Error("RealRedis() = false in cluster mode")
	}
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	covered := int64(0)
	for _, s := range shards {
		for _, r := range s.Slots {
			covered += r.End - r.Start + 1
		}
		if len(s.Slots) > 0 && len(s.Nodes) != 2 {
			t.Errorf("a shard with slots has %d nodes, want a master and a replica: %+v", len(s.Nodes), s.Nodes)
		}
	}
	if covered != 16384 {
		t.Errorf("slots covered = %d, want 16384", covered)
	}
}

// TestClusterSpreadsTagsAndCleansEveryMaster: keys with different hash tags land on different masters, and
// DeleteKeys and the test's cleanup reach each of them (a SCAN of one node would leave the others' keys).
func TestClusterSpreadsTagsAndCleansEveryMaster(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	var prefix string
	var cc *redis.ClusterClient
	masters := map[string][]string{} // master address -> keys it owns
	t.Run("test", func(t *testing.T) {
		rdb, p := testenv.RedisClient(t)
		prefix, cc = p, rdb.(*redis.ClusterClient)
		for i := range 60 {
			key := prefix + "inv:{SKU-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "}:avail"
			if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
				t.Fatal(err)
			}
			m, err := cc.MasterForKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			masters[m.Options().Addr] = append(masters[m.Options().Addr], key)
		}
		if len(masters) != 3 {
			t.Fatalf("60 tags landed on %d masters, want 3", len(masters))
		}
		for addr, keys := range masters {
			n := testenv.DeleteKeys(t, rdb, keys[0])
			if n != 1 {
				t.Errorf("DeleteKeys(%s) on master %s deleted %d keys, want 1", keys[0], addr, n)
			}
		}
	})
	// The subtest's cleanup has run: its client is closed, and no key of its prefix is left on any master.
	other := testenv.SharedCluster(t).Client()
	defer other.Close()
	err := other.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, prefix+"*").Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			t.Errorf("master %s keeps %d keys of the test's prefix after cleanup: %v", m.Options().Addr, len(keys), keys)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClusterKillAndRestartAMaster: Kill SIGKILLs a master, its replica takes over its slots, and Restart
// brings the node back as a replica: what the chaos cluster topology builds on.
func TestClusterKillAndRestartAMaster(t *testing.T) {
	needCluster(t)
	if os.Getenv("REDIS_CLUSTER_ADDRS") != "" {
		t.Skip("kills a node: only on a cluster this process started (REDIS_CLUSTER=1)")
	}
	c := testenv.SharedCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	top, err := c.Topology(ctx, c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	victim := top.Masters[0]
	witness := top.Masters[1]
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	for {
		now, err := c.Topology(ctx, witness)
		if err != nil {
			t.Fatal(err)
		}
		if len(now.Masters) == 3 && !slices.Contains(now.Masters, victim) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no replica took over from %s: masters %v", victim, now.Masters)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := c.Topology(ctx, witness)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(after.Replicas, victim) {
		t.Errorf("restarted %s is not a replica: masters %v, replicas %v", victim, after.Masters, after.Replicas)
	}
}
