package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-sql-driver/mysql"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/redis/go-redis/v9"
)

// RandomID returns n random bytes as hex.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RealMySQL reports whether MYSQL_DSN points the tests at a real server.
func RealMySQL() bool { return os.Getenv("MYSQL_DSN") != "" }

// RealRedis reports whether the tests run against a real Redis: the REDIS_ADDR server, a Redis Cluster
// (ClusterMode) or the Sentinel setup (SentinelMode).
func RealRedis() bool { return os.Getenv("REDIS_ADDR") != "" || ClusterMode() || SentinelMode() }

// MustOpenStore opens a migrated database of the test's own: a new MySQL database on the MYSQL_DSN server
// (dropped at cleanup), or a SQLite file in a temp dir.
func MustOpenStore(tb testing.TB) *sqlstore.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !RealMySQL() {
		store, err := sqlstore.Open(ctx, "", filepath.Join(tb.TempDir(), "ordersaga.db"))
		if err != nil {
			tb.Fatalf("open sqlite store: %v", err)
		}
		tb.Cleanup(func() { store.Close() })
		return store
	}
	dsn := MySQLDatabase(tb)
	store, err := sqlstore.Open(ctx, dsn, "")
	if err != nil {
		tb.Fatalf("open mysql store: %v", err)
	}
	tb.Cleanup(func() { store.Close() })
	return store
}

// MySQLDatabase creates an empty database on the MYSQL_DSN server, dropped at cleanup, and returns its DSN.
func MySQLDatabase(tb testing.TB) string {
	tb.Helper()
	cfg, err := mysql.ParseDSN(os.Getenv("MYSQL_DSN"))
	if err != nil {
		tb.Fatalf("MYSQL_DSN: %v", err)
	}
	name := "ordersaga_t_" + RandomID(6)
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		tb.Fatalf("open mysql: %v", err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS " + name)
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// MustOpenRedis returns a Redis layer of the test's own: the Redis Cluster (ClusterMode), the Sentinel setup's
// master (SentinelMode) or the REDIS_ADDR server under a fresh key prefix (its keys deleted at cleanup), or a
// fresh miniredis. Its idempotency markers wait for as many replicas as the processes' do by default in that
// form (config.RedisForm.DefaultMarkerReplicas: one on a cluster or Sentinel).
func MustOpenRedis(tb testing.TB) *redisstock.Store {
	tb.Helper()
	rdb, prefix := RedisClient(tb)
	form := config.RedisServer
	switch {
	case ClusterMode():
		form = config.RedisCluster
	case SentinelMode():
		form = config.RedisSentinel
	}
	return redisstock.New(rdb, prefix, 0).AckMarkers(form.DefaultMarkerReplicas())
}

// RedisClient returns a client and a key prefix of the test's own (see MustOpenRedis); in Sentinel mode a
// failover client on the shared setup. A cluster and Sentinel both asked for fail the test (redisModeOf).
func RedisClient(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	mode, err := redisModeOf(os.Getenv)
	if err != nil {
		tb.Fatal(err)
	}
	switch mode {
	case redisCluster:
		return ownClient(tb, "redis cluster", SharedCluster(tb).Client())
	case redisSentinel:
		return ownClient(tb, "redis sentinel", SharedSentinel(tb).Client())
	case redisMini:
		mr := miniredis.RunT(tb)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		tb.Cleanup(func() { rdb.Close() })
		return rdb, ""
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), PoolSize: 256})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redis at REDIS_ADDR: %v", err)
	}
	return rdb, ownPrefix(tb, rdb)
}

// UnreachableRedis returns a Redis stock store whose client dials a local port that nothing listens on
// (ClosedAddr, held for the test): every call fails at once with "connection refused", as when Redis is down.
func UnreachableRedis(tb testing.TB) *redisstock.Store {
	tb.Helper()
	addr := ClosedAddr(tb)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	tb.Cleanup(func() { rdb.Close() })
	return redisstock.New(rdb, "", 0)
}

// Item is one inventory row to seed.
type Item struct {
	SKU          string
	Stock, Price int64
}

// MustOpenStoreWith returns a migrated store of the test's own seeded with the items.
func MustOpenStoreWith(tb testing.TB, items ...Item) *sqlstore.Store {
	tb.Helper()
	store := MustOpenStore(tb)
	for _, it := range items {
		if err := store.SetInventory(tb.Context(), it.SKU, it.Stock, it.Price); err != nil {
			tb.Fatalf("seed %s: %v", it.SKU, err)
		}
	}
	return store
}

// NotLoaded is passed to MustOpenRedisSKU for a SKU whose counter must not exist.
const NotLoaded = -1

// MustOpenRedisSKU returns a Redis store of the test's own and a fresh SKU loaded with avail units (none when
// avail is NotLoaded).
func MustOpenRedisSKU(tb testing.TB, avail int64) (*redisstock.Store, string) {
	tb.Helper()
	rs := MustOpenRedis(tb)
	sku := "SKU-" + RandomID(4)
	if avail != NotLoaded {
		if err := rs.SetAvailable(tb.Context(), sku, avail); err != nil {
			tb.Fatal(err)
		}
	}
	return rs, sku
}

// ClosedAddr is a local address nothing listens on: a connection to it is refused at once. Its port is held
// (bound, never listening) until the test ends, so no server another test starts meanwhile can take it and
// answer, or hang, in its place: use it, never a port freed after use, wherever a test needs a peer that
// refuses.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatalf("closed address: socket: %v", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		tb.Fatalf("closed address: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		tb.Fatalf("closed address: getsockname: %v", err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// HangUpAddr is an address whose listener closes every connection it accepts, held until the test ends: a
// client of it fails at once, and, unlike ClosedAddr's port, no server that another test starts meanwhile can
// take the port and answer (a "dead" Temporal found healthy that way once failed TestAdminListener).
func HangUpAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// DeadStore is a SQL store whose connections are closed: every call fails.
func DeadStore(tb testing.TB) *sqlstore.Store {
	tb.Helper()
	s := MustOpenStore(tb)
	s.Close()
	return s
}

// DeleteKeys deletes the Redis keys matching each pattern (on every master of a cluster) and returns how many
// it deleted.
func DeleteKeys(tb testing.TB, rdb redis.UniversalClient, patterns ...string) int {
	tb.Helper()
	n := 0
	for _, pattern := range patterns {
		d, err := redisstock.DeleteMatching(context.Background(), rdb, pattern)
		if err != nil {
			tb.Fatal(err)
		}
		n += d
	}
	return n
}

// Clock is a settable clock for sqlstore.Store.SetClock: tests age rows by moving it instead of sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at the real time now.
func NewClock() *Clock { return &Clock{t: time.Now().UTC()} }

// Now is the clock's time (pass the method value to SetClock).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Scaled is n, or underRace when the test runs under the race detector (RaceEnabled): a test that places n
// orders to load the saga places fewer there, where the point is the data races of the same code, not the load.
func Scaled(n, underRace int) int {
	if RaceEnabled {
		return underRace
	}
	return n
}
