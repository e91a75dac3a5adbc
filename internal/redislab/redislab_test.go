package redislab_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/redis/go-redis/v9"
)

// TestStartRefusesBadShape: redis-cli --cluster create needs 3 masters and no negative replica count; the error
// names the argument before any server starts.
func TestStartRefusesBadShape(t *testing.T) {
	for _, c := range []struct {
		masters, replicas int
		want              string
	}{{2, 1, "masters"}, {3, -1, "replicas"}} {
		_, err := redislab.Start(t.Context(), c.masters, c.replicas)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%d, %d) = %v, want an error naming %s", c.masters, c.replicas, err, c.want)
		}
	}
}

// TestStartAndStop: a started cluster of 3 masters with one replica each covers every slot, and Stop kills
// every node and removes its directory.
func TestStartAndStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	top, err := c.Topology(ctx, c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Masters) != 3 || len(top.Replicas) != 3 || len(c.Addrs()) != 6 {
		t.Fatalf("masters %v, replicas %v, addrs %v; want 3, 3 and 6", top.Masters, top.Replicas, c.Addrs())
	}
	rdb := c.Client()
	defer rdb.Close()
	if err := rdb.Set(ctx, "{a}k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	c.Stop()
	stopped = true
	for _, addr := range c.Addrs() {
		one := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		err := one.Ping(ctx).Err()
		one.Close()
		if err == nil {
			t.Errorf("%s answers PING after Stop", addr)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stop left %s: %v", dir, err)
	}
}

// TestExistingIsNeverKilled: a cluster named by its seeds is only used; Kill and Restart refuse it.
func TestExistingIsNeverKilled(t *testing.T) {
	c := redislab.Existing([]string{"127.0.0.1:1", " 127.0.0.1:2 ", ""})
	if got := c.Addrs(); len(got) != 2 || got[1] != "127.0.0.1:2" {
		t.Errorf("Addrs = %q, want the two seeds trimmed", got)
	}
	if err := c.Kill("127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "not started by this process") {
		t.Errorf("Kill on an existing cluster = %v, want a refusal", err)
	}
	c.Stop() // a no-op: nothing of it is this process's
}

// TestPauseAndFailover: ShardOf names a key's master and replica; a paused node answers nothing until
// resumed; the master killed, its replica is promoted (ShardOf names it), WaitServed returns once every slot
// is served again, and the killed node restarted rejoins as a replica (WaitReady).
func TestPauseAndFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	const key = "{sku}k"
	sh, err := c.ShardOf(ctx, c.Addrs()[0], key)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Master == "" || len(sh.Replicas) != 1 {
		t.Fatalf("ShardOf(%s) = %+v, want a master and one replica", key, sh)
	}
	replica := sh.Replicas[0]
	if err := c.Pause(replica); err != nil {
		t.Fatal(err)
	}
	one := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1, ReadTimeout: 300 * time.Millisecond})
	defer one.Close()
	if err := one.Ping(ctx).Err(); err == nil {
		t.Errorf("paused %s answers PING", replica)
	}
	if err := c.Resume(replica); err != nil {
		t.Fatal(err)
	}
	if err := one.Ping(ctx).Err(); err != nil {
		t.Errorf("resumed %s: PING: %v", replica, err)
	}

	if err := c.Kill(sh.Master); err != nil {
		t.Fatal(err)
	}
	for {
		now, err := c.ShardOf(ctx, replica, key)
		if err == nil && now.Master == replica {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s not promoted: %+v, %v", replica, now, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.WaitServed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, sh.Master); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	top, err := c.Topology(ctx, replica)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(top.Replicas, sh.Master) {
		t.Errorf("restarted %s is not a replica: %+v", sh.Master, top)
	}
}
