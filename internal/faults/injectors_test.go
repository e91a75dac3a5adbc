package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/faults"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// redisBehind starts a redis-server of the test's own and a proxy in front of it, and returns a client of
// the proxy that never retries (so a fault shows as the command's error).
func redisBehind(t *testing.T) (*faults.RedisServer, *faults.Proxy, *redis.Client) {
	t.Helper()
	requireRealStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := faults.StartRedis(ctx, testenv.StablePort(t, "127.0.0.1"), t.TempDir())
	must(t, err)
	t.Cleanup(r.Close)
	p, err := faults.NewProxy("redis", r.Addr())
	must(t, err)
	t.Cleanup(p.Close)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, PoolSize: 4,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 400 * time.Millisecond, WriteTimeout: 400 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return r, p, rdb
}

// TestProxyToxics proves each proxy fault on a bare Redis client: it acts while in place and is gone after
// RemoveToxics.
func TestProxyToxics(t *testing.T) {
	_, p, rdb := redisBehind(t)
	ctx := context.Background()
	must(t, rdb.Ping(ctx).Err())

	must(t, p.Latency(150*time.Millisecond, 50*time.Millisecond))
	start := time.Now()
	must(t, rdb.Ping(ctx).Err())
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("latency 150±50 ms: PING took %s", took)
	}
	must(t, p.RemoveToxics())

	must(t, p.Blackhole())
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("blackhole: PING answered")
	}
	must(t, p.RemoveToxics())
	must(t, rdb.Ping(ctx).Err())

	must(t, p.ResetPeer(0))
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("reset_peer: PING answered")
	}
	must(t, p.RemoveToxics())
	must(t, rdb.Ping(ctx).Err())

	conn := rdb.Conn()
	defer conn.Close()
	must(t, conn.Ping(ctx).Err())
	must(t, p.ResetConnections())
	if err := conn.Ping(ctx).Err(); err == nil {
		t.Error("ResetConnections: the old connection still answers")
	}
	must(t, rdb.Ping(ctx).Err()) // a new connection to the same address works
	if got := p.Injected(); got != 4 {
		t.Errorf("Injected() = %d, want 4", got)
	}
}

// TestRedisServerFaults proves Restart (data lost), StopFor (refused meanwhile), ScriptFlush, and RestartFrom a
// Snapshot (the keys of then, not of now), each start counted with the keys it loaded.
func TestRedisServerFaults(t *testing.T) {
	r, _, rdb := redisBehind(t)
	ctx := context.Background()
	must(t, rdb.Set(ctx, "k", "v", 0).Err())
	must(t, r.Restart(ctx))
	if err := rdb.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("after Restart: GET k = %v, want nil (no persistence)", err)
	}

	// StopFor for longer than the test waits, ended by its context once the server's port refuses: the port
	// stays closed from the kill until the context ends, a window no wait for time can miss on a loaded machine.
	stopCtx, restart := context.WithCancel(ctx)
	defer restart()
	stopped := make(chan error, 1)
	go func() { stopped <- r.StopFor(stopCtx, time.Minute) }()
	for deadline := time.Now().Add(30 * time.Second); !refuses(r.Addr()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("during StopFor: the server's port still accepts 30s after the stop began")
		}
	}
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Error("during StopFor: PING answered")
	}
	select {
	case err := <-stopped:
		t.Fatalf("StopFor returned (%v) before its context ended or its minute passed", err)
	default:
	}
	restart()
	must(t, <-stopped)
	must(t, rdb.Ping(ctx).Err())

	sha, err := rdb.ScriptLoad(ctx, "return 1").Result()
	must(t, err)
	must(t, r.ScriptFlush(ctx))
	if exists, err := rdb.ScriptExists(ctx, sha).Result(); err != nil || exists[0] {
		t.Errorf("after ScriptFlush: SCRIPT EXISTS = %v %v, want false", exists, err)
	}

	must(t, rdb.Set(ctx, "then", "v", 0).Err())
	snap, err := r.Snapshot(ctx)
	must(t, err)
	must(t, rdb.Set(ctx, "now", "v", 0).Err())
	loaded, err := r.RestartFrom(ctx, snap)
	must(t, err)
	if loaded != 1 {
		t.Errorf("RestartFrom loaded %d keys, want 1", loaded)
	}
	if err := rdb.Get(ctx, "then").Err(); err != nil {
		t.Errorf("after RestartFrom: GET then = %v, want the snapshot's value", err)
	}
	if err := rdb.Get(ctx, "now").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("after RestartFrom: GET now = %v, want nil (written after the snapshot)", err)
	}
	must(t, r.Restart(ctx))
	if err := rdb.Get(ctx, "then").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("a Restart after RestartFrom: GET then = %v, want nil (empty again)", err)
	}
	if got, want := r.Comebacks(), []int64{0, 0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("Comebacks() = %v, want %v", got, want)
	}
	if got := r.Faults(); got != 5 {
		t.Errorf("Faults() = %d, want 5", got)
	}
}

// refuses reports whether a TCP connection to addr is refused (nothing listens there).
func refuses(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestKillConnectionsOfUser proves that every pooled connection on the database is killed, and no other.
func TestKillConnectionsOfUser(t *testing.T) {
	requireRealStores(t)
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(testenv.MySQLDatabase(t))
	must(t, err)
	db, err := sql.Open("mysql", cfg.FormatDSN())
	must(t, err)
	t.Cleanup(func() { db.Close() })
	admin := cfg.Clone()
	admin.DBName = ""
	adb, err := sql.Open("mysql", admin.FormatDSN())
	must(t, err)
	t.Cleanup(func() { adb.Close() })

	conns := make([]*sql.Conn, 3)
	for i := range conns {
		conns[i], err = db.Conn(ctx)
		must(t, err)
		must(t, conns[i].PingContext(ctx))
		defer conns[i].Close()
	}
	n, err := faults.KillConnections(ctx, adb, cfg.User, cfg.DBName)
	must(t, err)
	if n != len(conns) {
		t.Errorf("killed %d connections, want %d", n, len(conns))
	}
	for i, c := range conns {
		if _, err := c.ExecContext(ctx, "SELECT 1"); err == nil {
			t.Errorf("connection %d still answers after the kill", i)
		}
	}
	must(t, adb.PingContext(ctx)) // the caller's own pool is spared
}
