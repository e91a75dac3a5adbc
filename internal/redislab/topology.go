package redislab

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the nodes of a cluster say about it: its topology, the shard of a key, and whether every slot is
// served (the waits of Start and of a failover).

// Topology is what one node's CLUSTER NODES says: the masters (with slots) and the replicas, by address.
type Topology struct {
	Masters, Replicas []string
}

// WaitReady waits until every running node of a started cluster (the seeds of another) says cluster_state:ok
// with all 16384 slots assigned and ok; on a started cluster, until each also sees the masters and replicas it
// was started with, none failing, and every slot served by a master and its synced replicas.
func (c *Cluster) WaitReady(ctx context.Context) error {
	return waitUntil(ctx, "redis cluster not ready", c.checkReady)
}

func (c *Cluster) checkReady(ctx context.Context) error {
	for _, addr := range c.runningAddrs() {
		err := withNode(ctx, addr, func(rdb *redis.Client) error {
			if err := slotsServed(ctx, addr, rdb); err != nil {
				return err
			}
			top, err := nodeTopology(ctx, rdb)
			if err != nil {
				return err
			}
			if c.nodes == nil {
				return nil
			}
			if len(top.Masters) != c.masters || len(top.Replicas) != c.masters*c.replicas {
				return fmt.Errorf("%s: sees masters %v and replicas %v", addr, top.Masters, top.Replicas)
			}
			// A replica counts once it is online and has synced from its master (a non-zero replication
			// offset, as its master's pings reach it): CLUSTER SLOTS, which clients route by, lists no
			// replica before that.
			shards, err := rdb.ClusterShards(ctx).Result()
			if err != nil {
				return err
			}
			for _, s := range shards {
				if len(s.Slots) == 0 {
					continue
				}
				synced := 0
				for _, n := range s.Nodes {
					if n.Role == "replica" && n.Health == "online" && n.ReplicationOffset > 0 {
						synced++
					}
				}
				if synced != c.replicas {
					return fmt.Errorf("%s: slots from %d have %d synced replicas, want %d: %+v", addr, s.Slots[0].Start, synced, c.replicas, s.Nodes)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) checkServed(ctx context.Context) error {
	for _, addr := range c.runningAddrs() {
		if err := withNode(ctx, addr, func(rdb *redis.Client) error { return slotsServed(ctx, addr, rdb) }); err != nil {
			return err
		}
	}
	return nil
}

// slotsServed checks that the node's CLUSTER INFO says cluster_state:ok with every slot assigned and ok.
func slotsServed(ctx context.Context, addr string, rdb *redis.Client) error {
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"} {
		if !strings.Contains(info, want+"\r\n") {
			return fmt.Errorf("%s: CLUSTER INFO lacks %s", addr, want)
		}
	}
	return nil
}

// Topology is the cluster as the node at addr sees it.
func (c *Cluster) Topology(ctx context.Context, addr string) (Topology, error) {
	var top Topology
	err := withNode(ctx, addr, func(rdb *redis.Client) (err error) {
		top, err = nodeTopology(ctx, rdb)
		return err
	})
	return top, err
}

// nodeTopology reads CLUSTER NODES: "<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...".
// A node flagged fail or handshake counts as neither; a master counts only with slots.
func nodeTopology(ctx context.Context, rdb *redis.Client) (Topology, error) {
	out, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return Topology{}, err
	}
	var top Topology
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := "," + f[2] + ","
		switch {
		case strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,") || strings.Contains(flags, ",handshake,"):
		case strings.Contains(flags, ",master,") && len(f) > 8:
			top.Masters = append(top.Masters, addr)
		case strings.Contains(flags, ",slave,"):
			top.Replicas = append(top.Replicas, addr)
		}
	}
	return top, nil
}

// Shard is the master that serves a key's slot and its replicas that are online, by address.
type Shard struct {
	Slot     int64
	Master   string // "" while no master online serves the slot
	Replicas []string
}

// ShardOf is the shard of key's slot (CLUSTER KEYSLOT, CLUSTER SHARDS) as the node at addr sees it.
func (c *Cluster) ShardOf(ctx context.Context, addr, key string) (Shard, error) {
	var sh Shard
	err := withNode(ctx, addr, func(rdb *redis.Client) error {
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER KEYSLOT: %w", addr, err)
		}
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER SHARDS: %w", addr, err)
		}
		sh = Shard{Slot: slot}
		for _, s := range shards {
			if !slices.ContainsFunc(s.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
				continue
			}
			for _, n := range s.Nodes {
				if n.Health != "online" {
					continue
				}
				a := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				switch n.Role {
				case "master":
					sh.Master = a
				case "replica":
					sh.Replicas = append(sh.Replicas, a)
				}
			}
		}
		return nil
	})
	return sh, err
}

// WaitServed waits until every running node says cluster_state:ok with all 16384 slots assigned and ok: what
// clients need after a failover, before the failed node is back (WaitReady waits for that too).
func (c *Cluster) WaitServed(ctx context.Context) error {
	return waitUntil(ctx, "redis cluster slots not served", c.checkServed)
}

// waitUntil calls check every 50 ms until it answers nil, or ctx ends: then the error says what and check's
// last answer.
func waitUntil(ctx context.Context, what string, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
