package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/redislab"
)

// The cluster scenario's faults, on the run's own Redis Cluster (3 masters, 1 replica each: redislab): the
// master serving the slot of the run's first SKU SIGKILLed under load (redis_master_kill), and the same with
// its replica cut off first, so that the writes of the last seconds are lost with the master
// (redis_lost_writes). Each waits for the replica's promotion, then restarts the killed node, which rejoins
// empty as a replica, and waits until the cluster is whole again.

// clusterSKU is the SKU whose slot's master the cluster faults kill.
var clusterSKU = skus[0]

const (
	// failoverLimit bounds the wait for a replica's promotion (the nodes run with a node timeout of 2 s).
	failoverLimit = 60 * time.Second
	// rejoinLimit bounds the wait for a killed node to be back and the cluster whole again.
	rejoinLimit = 90 * time.Second
	// lostWritesWindow is how long the load writes to a master whose replica is cut off before it dies.
	lostWritesWindow = 2 * time.Second
)

// masterKill SIGKILLs the master of a SKU's slot with the load running and waits for its replica to take
// over. With loseWrites the replica is first paused (SIGSTOP) and its replication connection killed on the
// master, the load writes for lostWritesWindow, a probe key is written on the master, and the replica is
// continued (SIGCONT) once the master is dead: what the master took in meanwhile is lost with it, as
// asynchronous replication allows. The fault counts only once the promotion was seen, and, with loseWrites,
// only when the probe key is missing afterwards; otherwise it counts as missed (missed_<kind>).
type masterKill struct {
	t          *topology
	rec        *recorder
	sku        string
	loseWrites bool
	// keepLink (a test's) pauses the replica without killing its replication connection and lets it catch up
	// with the master before the kill: nothing is lost, and the fault must count as missed.
	keepLink bool
}

func (f masterKill) Name() string {
	if f.loseWrites {
		return "redis_lost_writes"
	}
	return "redis_master_kill"
}

func (f masterKill) Inject(ctx context.Context) error {
	c := f.t.cluster
	key := f.t.rs.AvailKey(f.sku)
	sh, err := f.t.shardOf(ctx, key)
	if err != nil {
		return err
	}
	if sh.Master == "" || len(sh.Replicas) == 0 {
		return fmt.Errorf("slot %d of %s: master %q, replicas %v: nothing to fail over to", sh.Slot, key, sh.Master, sh.Replicas)
	}
	replica := sh.Replicas[0]
	var probe string
	var sent int64 // the master's replication offset after the probe
	if f.loseWrites {
		if probe, sent, err = f.cutOffAndWrite(ctx, sh.Master, replica); err != nil {
			return errors.Join(err, c.Resume(replica))
		}
	}
	if err := c.Kill(sh.Master); err != nil {
		if f.loseWrites {
			err = errors.Join(err, c.Resume(replica))
		}
		return err
	}
	killed := time.Now()
	if f.loseWrites {
		if err := c.Resume(replica); err != nil {
			return err
		}
	}
	fo := f.t.awaitFailover(ctx, key, replica, killed, failoverLimit)
	switch {
	case !fo.promoted:
		f.rec.missKind(f.Name())
		fmt.Fprintf(f.t.log, "chaos: %s: master %s of slot %d killed, replica %s not promoted within %s; counted as missed\n",
			f.Name(), sh.Master, sh.Slot, replica, failoverLimit)
	case f.loseWrites:
		n, err := f.t.rs.Client().Exists(ctx, probe).Result()
		if err != nil {
			return fmt.Errorf("%s: look for the probe key on the promoted replica: %w", f.Name(), err)
		}
		if n != 0 {
			f.rec.missKind(f.Name())
			fmt.Fprintf(f.t.log, "chaos: %s: the probe key %s, written on master %s while its replica %s was paused, is on the promoted replica: nothing was lost; counted as missed\n",
				f.Name(), probe, sh.Master, replica)
			_ = f.t.rs.Client().Del(ctx, probe).Err()
			break
		}
		f.rec.count(f.Name())
		f.rec.recovered(f.Name(), fo.answered)
		fmt.Fprintf(f.t.log, "chaos: %s: master %s of slot %d (%s) killed %s after its replica %s was cut off; the replica %s, without the probe key (the writes were lost: %s)\n",
			f.Name(), sh.Master, sh.Slot, f.sku, lostWritesWindow, replica, fo, lostBytes(ctx, replica, sent))
	default:
		f.rec.count(f.Name())
		f.rec.recovered(f.Name(), fo.answered)
		fmt.Fprintf(f.t.log, "chaos: %s: master %s of slot %d (%s) killed; its replica %s %s\n",
			f.Name(), sh.Master, sh.Slot, f.sku, replica, fo)
	}
	return f.t.rejoin(ctx, sh.Master, fo.promoted)
}

// cutOffAndWrite cuts the replica off its master (redislab.CutOffReplica; with keepLink it is only paused, and
// catches up before the kill), lets the load write to the master alone for lostWritesWindow and writes a probe
// key in the SKU's slot there; it returns the key.
func (f masterKill) cutOffAndWrite(ctx context.Context, master, replica string) (probe string, sent int64, err error) {
	pause := func() error { return f.t.cluster.Pause(replica) }
	if f.keepLink {
		err = pause()
	} else {
		err = redislab.CutOffReplica(ctx, master, pause)
	}
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", f.Name(), err)
	}
	m := redis.NewClient(&redis.Options{Addr: master, MaxRetries: -1})
	defer m.Close()
	select {
	case <-ctx.Done():
		return "", 0, ctx.Err()
	case <-time.After(lostWritesWindow):
	}
	probe = f.t.rs.Prefix() + "chaos:lost-probe:{" + f.sku + "}:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := m.Set(ctx, probe, "written on the master only", 0).Err(); err != nil {
		return "", 0, fmt.Errorf("%s: write the probe key on %s: %w", f.Name(), master, err)
	}
	if sent, err = replInfo(ctx, m, "master_repl_offset"); err != nil {
		return "", 0, fmt.Errorf("%s: %s: %w", f.Name(), master, err)
	}
	if f.keepLink {
		return probe, sent, f.catchUp(ctx, replica, sent)
	}
	return probe, sent, nil
}

// catchUp continues the paused replica and waits until it has applied the master's stream up to offset.
func (f masterKill) catchUp(ctx context.Context, replica string, offset int64) error {
	if err := f.t.cluster.Resume(replica); err != nil {
		return err
	}
	r := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1})
	defer r.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, err := replInfo(ctx, r, "slave_repl_offset")
		if err == nil && got >= offset {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: replica %s at offset %d (%v), not %d, 10 s after it was continued", f.Name(), replica, got, err, offset)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lostBytes says how much of the dead master's replication stream its promoted replica never got: from the
// replica's last offset of the old stream (second_repl_offset - 1) to the master's offset after the probe
// (the writes between that reading and the kill are not counted).
func lostBytes(ctx context.Context, replica string, sent int64) string {
	r := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1})
	defer r.Close()
	second, err := replInfo(ctx, r, "second_repl_offset")
	if err != nil {
		return fmt.Sprintf("the replica's offset unread: %v", err)
	}
	return fmt.Sprintf("%d bytes of the master's replication stream, the probe's among them, never reached the replica", sent-(second-1))
}

// replInfo reads an integer field of INFO replication.
func replInfo(ctx context.Context, rdb *redis.Client, field string) (int64, error) {
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO replication: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO replication has no %s", field)
}

// shardOf is the shard of key's slot as the first node of the cluster that answers sees it.
func (t *topology) shardOf(ctx context.Context, key string) (sh redislab.Shard, err error) {
	for _, addr := range t.cluster.Addrs() {
		if sh, err = t.cluster.ShardOf(ctx, addr, key); err == nil {
			return sh, nil
		}
	}
	return sh, fmt.Errorf("shard of %s: no node answers: %w", key, err)
}

// failover is what awaitFailover saw: the time from the kill until the replica said it was the slot's
// master, and until the slot answered through the run's own cluster client (built as every process's is, by
// platform.OpenRedis: it learns the new master when its slot map is reloaded).
type failover struct {
	promoted            bool
	promotion, answered time.Duration
}

func (fo failover) String() string {
	return fmt.Sprintf("promoted after %s, slot answering the run's cluster client after %s", fo.promotion.Round(time.Millisecond), fo.answered.Round(time.Millisecond))
}

// awaitFailover waits, after the master of key's slot was killed at killed, until replica serves the slot
// (promoted: the replica's CLUSTER SHARDS names it the slot's master) and a GET of key through the run's own
// cluster client answers, or limit passes.
func (t *topology) awaitFailover(ctx context.Context, key, replica string, killed time.Time, limit time.Duration) failover {
	var fo failover
	answered := false
	for time.Since(killed) < limit && ctx.Err() == nil {
		if !answered {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err := t.rs.Client().Get(pctx, key).Err()
			cancel()
			if err == nil || errors.Is(err, redis.Nil) {
				answered, fo.answered = true, time.Since(killed)
			}
		}
		if !fo.promoted {
			sh, err := t.cluster.ShardOf(ctx, replica, key)
			if err == nil && sh.Master == replica {
				fo.promoted, fo.promotion = true, time.Since(killed)
			}
		}
		if answered && fo.promoted {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !answered {
		fo.answered = time.Since(killed)
	}
	return fo
}

// rejoin waits until every slot is served (after a promotion: without one the killed node's slots wait for
// it), restarts the killed node at addr (empty: no persistence) and waits until the cluster is whole again,
// the node back as a replica.
func (t *topology) rejoin(ctx context.Context, addr string, promoted bool) error {
	ctx, cancel := context.WithTimeout(ctx, rejoinLimit)
	defer cancel()
	c := t.cluster
	if promoted {
		if err := c.WaitServed(ctx); err != nil {
			return err
		}
	}
	if err := c.Restart(ctx, addr); err != nil {
		return err
	}
	if err := c.WaitReady(ctx); err != nil {
		return err
	}
	top, err := c.Topology(ctx, addr)
	if err != nil {
		return err
	}
	if !slices.Contains(top.Replicas, addr) {
		return fmt.Errorf("restarted %s did not rejoin as a replica: masters %v, replicas %v", addr, top.Masters, top.Replicas)
	}
	fmt.Fprintf(t.log, "chaos: %s restarted, back as a replica; the cluster is whole\n", addr)
	return nil
}

// clusterFaultList is the cluster faults: the master of clusterSKU's slot killed, and killed after its last
// writes never reached its replica.
func (r *runState) clusterFaultList() []fault {
	return []fault{masterKill{t: r.t, rec: r.rec, sku: clusterSKU}, masterKill{t: r.t, rec: r.rec, sku: clusterSKU, loseWrites: true}}
}

// clusterFaults injects each cluster fault Kills times with the load running, 5 s apart.
func (r *runState) clusterFaults(ctx context.Context) error {
	return r.underLoad(ctx, r.phaseOrders(), func(ctx context.Context) error {
		for _, f := range r.clusterFaultList() {
			for range r.sc.Kills {
				if err := f.Inject(ctx); err != nil {
					return fmt.Errorf("%s: %w", f.Name(), err)
				}
				time.Sleep(5 * time.Second)
			}
		}
		return nil
	})
}
