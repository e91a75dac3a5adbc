package faults_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/faults"
)

// faultFor is how long each fault lasts while the load runs.
const faultFor = 3 * time.Second

// wait sleeps for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// must fails the test on an injector's error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLatency: 150 ms ± 50 ms on every reply of Redis and of MariaDB for the fault's duration.
func TestLatency(t *testing.T) {
	scenario{name: "latency", inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
		must(t, s.redisProxy.Latency(150*time.Millisecond, 50*time.Millisecond))
		must(t, s.dbProxy.Latency(150*time.Millisecond, 50*time.Millisecond))
		wait(ctx, faultFor)
		must(t, s.redisProxy.RemoveToxics())
		must(t, s.dbProxy.RemoveToxics())
		return s.redisProxy.Injected() + s.dbProxy.Injected(), "latency=150ms±50ms on redis and mysql"
	}}.run(t)
}

// TestConnectionResets: every open connection to both stores dropped twice, then reset_peer on every new
// connection's first request for the fault's duration.
func TestConnectionResets(t *testing.T) {
	scenario{name: "resets", inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
		for range 2 {
			must(t, s.redisProxy.ResetConnections())
			must(t, s.dbProxy.ResetConnections())
			wait(ctx, 500*time.Millisecond)
		}
		must(t, s.redisProxy.ResetPeer(0))
		must(t, s.dbProxy.ResetPeer(0))
		wait(ctx, faultFor)
		must(t, s.redisProxy.RemoveToxics())
		must(t, s.dbProxy.RemoveToxics())
		return s.redisProxy.Injected() + s.dbProxy.Injected(), "2 drops of every connection + reset_peer"
	}}.run(t)
}

// TestRedisBlackhole: Redis accepts connections and never answers for the fault's duration; with the
// fallback on, reserves go to the database meanwhile.
func TestRedisBlackhole(t *testing.T) {
	scenario{name: "redis-blackhole", redis: &redisEvidence{unreachable: true, fellBack: true},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			must(t, s.redisProxy.BlackholeFor(ctx, faultFor))
			return s.redisProxy.Injected(), "redis blackholed"
		}}.runFallbacks(t)
}

// TestMySQLBlackhole: MariaDB accepts connections and never answers for the fault's duration.
func TestMySQLBlackhole(t *testing.T) {
	scenario{name: "mysql-blackhole", inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
		must(t, s.dbProxy.BlackholeFor(ctx, faultFor))
		return s.dbProxy.Injected(), "mysql blackholed"
	}}.run(t)
}

// TestRedisRestart: Redis crashes and comes back empty, twice (no persistence): the stack must cold-load
// the counters from the database and reconciliation must repair the lost holds. Each comeback takes about
// 0.1 s, within the Redis client's own retries: the fallback may or may not be taken.
func TestRedisRestart(t *testing.T) {
	scenario{name: "redis-restart", redis: &redisEvidence{comebacks: []int64{0, 0}},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			must(t, s.redis.Restart(ctx))
			wait(ctx, faultFor/2)
			must(t, s.redis.Restart(ctx))
			return s.redis.Faults(), "redis killed and restarted empty twice"
		}}.runFallbacks(t)
}

// TestRedisStop: Redis is down (connection refused) for the fault's duration, then back empty.
func TestRedisStop(t *testing.T) {
	scenario{name: "redis-stop", redis: &redisEvidence{unreachable: true, fellBack: true, comebacks: []int64{0}},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			must(t, s.redis.StopFor(ctx, faultFor))
			return s.redis.Faults(), "redis down then back empty"
		}}.runFallbacks(t)
}

// Redis's flapping: down for flapDown, back empty for flapUp, twice.
const (
	flapDown = time.Second
	flapUp   = 2 * time.Second
)

// TestRedisFlapping: Redis goes down, comes back empty, goes down again and comes back empty again, within one
// run under load. With the fallback on, reserves must fall back during each outage and reserve in Redis
// between them: the breaker closes and the counters are loaded again twice.
func TestRedisFlapping(t *testing.T) {
	scenario{name: "redis-flapping", lasts: 2 * (flapDown + flapUp),
		redis: &redisEvidence{unreachable: true, fellBack: true, comebacks: []int64{0, 0}},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			var during []int
			for range 2 {
				before := s.metric(t, metricFallbacks)
				must(t, s.redis.StopFor(ctx, flapDown))
				during = append(during, s.metric(t, metricFallbacks)-before)
				wait(ctx, flapUp)
			}
			if s.opts.dbFallback && slices.Contains(during, 0) {
				t.Errorf("redis-flapping: reserves that fell back during each outage: %v, want some in both", during)
			}
			return s.redis.Faults(), fmt.Sprintf("redis down %s, back empty %s, twice; fallbacks during each outage %v", flapDown, flapUp, during)
		}}.runFallbacks(t)
}

// TestRedisOldSnapshot: a third into the fault Redis is saved (SAVE), the load goes on for another third,
// then Redis is killed and comes back from that snapshot: counters, holds and tombstones of the past,
// promising units the database has since sold and holding units of orders since confirmed or cancelled. The
// database's deduct must refuse every oversell and reconciliation must bring Redis back to the database.
func TestRedisOldSnapshot(t *testing.T) {
	scenario{name: "redis-old-snapshot", redis: &redisEvidence{comebacks: []int64{-1}},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			wait(ctx, faultFor/3)
			taken := time.Now()
			snap, err := s.redis.Snapshot(ctx)
			must(t, err)
			wait(ctx, faultFor/3)
			now := redisView(ctx, t, s)
			keys, err := s.redis.RestartFrom(ctx, snap)
			must(t, err)
			age := time.Since(taken)
			then := redisView(ctx, t, s)
			var stale int64
			for sku, v := range now {
				stale += abs(v.avail-then[sku].avail) + abs(v.holds-then[sku].holds)
			}
			if stale == 0 {
				t.Errorf("redis-old-snapshot: Redis came back from a snapshot %s old with the counters and holds it had at the kill (%v): nothing is stale", age.Round(time.Millisecond), now)
			}
			wait(ctx, faultFor/3)
			return s.redis.Faults(), fmt.Sprintf("redis back from a snapshot %s old: %d keys, counters and holds %d units off the kill's %v -> %v",
				age.Round(time.Millisecond), keys, stale, now, then)
		}}.runFallbacks(t)
}

// skuView is one SKU's counter and held units in Redis.
type skuView struct{ avail, holds int64 }

func (v skuView) String() string { return fmt.Sprintf("%d+%d", v.avail, v.holds) }

// redisView reads the load's SKUs in Redis through the worker's client.
func redisView(ctx context.Context, t *testing.T, s *stack) map[string]skuView {
	t.Helper()
	out := map[string]skuView{}
	for sku := range loadStock {
		avail, _, err := s.env.Redis.Available(ctx, sku)
		must(t, err)
		holds, err := s.env.Redis.Holds(ctx, sku)
		must(t, err)
		v := skuView{avail: avail}
		for _, q := range holds {
			v.holds += q
		}
		out[sku] = v
	}
	return out
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// TestScriptFlush: Redis forgets every Lua script, several times: EVALSHA answers NOSCRIPT and the store
// must load the script again.
func TestScriptFlush(t *testing.T) {
	scenario{name: "script-flush", inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
		for range 6 {
			must(t, s.redis.ScriptFlush(ctx))
			wait(ctx, faultFor/6)
		}
		return s.redis.Faults(), "SCRIPT FLUSH every 500ms"
	}}.run(t)
}

// TestKillConnections: every MariaDB connection of the store killed (KILL CONNECTION), four times.
func TestKillConnections(t *testing.T) {
	scenario{name: "mysql-kill", inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
		killed := 0
		for range 4 {
			n, err := faults.KillConnections(ctx, s.admin, s.user, s.schema)
			must(t, err)
			killed += n
			wait(ctx, faultFor/4)
		}
		return killed, fmt.Sprintf("%d connections killed in 4 rounds", killed)
	}}.run(t)
}

// TestLockConflicts: a crosser holds the inventory rows in descending order while the store locks them
// ascending, with the store's sessions at innodb_lock_wait_timeout=1: the store's transactions meet
// deadlocks (1213) and lock wait timeouts (1205) and must retry them.
func TestLockConflicts(t *testing.T) {
	scenario{name: "mysql-locks", opts: stackOptions{dsnParams: map[string]string{"innodb_lock_wait_timeout": "1"}},
		inject: func(ctx context.Context, t *testing.T, s *stack) (int, string) {
			before, err := faults.ReadInnoDBCounters(ctx, s.admin)
			must(t, err)
			c := &faults.Crosser{DB: s.rawDB(t), Table: "inventory", Key: "sku", Keys: []string{"FLT-A", "FLT-B", "FLT-C"},
				Hold: 1500 * time.Millisecond, Ballast: 200, LockWait: 2 * time.Second}
			crossing, stop := context.WithTimeout(ctx, 2*faultFor)
			defer stop()
			st, err := c.Run(crossing)
			must(t, err)
			after, err := faults.ReadInnoDBCounters(ctx, s.admin)
			must(t, err)
			d := after.Sub(before)
			if d.Deadlocks+d.RowLockWaits == 0 {
				t.Errorf("mysql-locks: the server counted no deadlock and no row lock wait (crosser %+v): the locks never crossed", st)
			}
			return st.Rounds + st.OwnConflict, fmt.Sprintf("crosser rounds=%d own_conflicts=%d server: deadlocks=%d row_lock_waits=%d row_lock_time=%dms",
				st.Rounds, st.OwnConflict, d.Deadlocks, d.RowLockWaits, d.RowLockTimeMs)
		}}.run(t)
}
