package faults_test

import (
	"context"
	"database/sql"
	"os/exec"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/faults"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// stack is the saga on the real MariaDB and a redis-server of the test's own, each behind a Toxiproxy
// proxy of its own, so a test can break either store under the running worker.
type stack struct {
	env        *sagatest.Env
	redis      *faults.RedisServer
	redisProxy *faults.Proxy
	dbProxy    *faults.Proxy
	admin      *sql.DB // root on the server, no default database: the fault injectors' pool
	schema     string  // the test's database
	user       string  // the store's MySQL user
	dsn        string  // the store's DSN (through the proxy)
	dbAddr     string  // MariaDB's own address
}

// stackOptions changes how the stores are opened.
type stackOptions struct {
	// dsnParams are session variables set on every store connection (innodb_lock_wait_timeout, ...).
	dsnParams map[string]string
}

// requireRealStores skips a test that needs the real MariaDB and a redis-server binary.
func requireRealStores(t *testing.T) {
	t.Helper()
	if !testenv.RealMySQL() {
		t.Skip("store fault tests need the real MariaDB: set MYSQL_DSN (e.g. root@tcp(127.0.0.1:3306)/test)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("store fault tests need the redis-server binary on PATH")
	}
}

// newStack starts redis-server, both proxies, the test's database and the saga on them.
func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	requireRealStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &stack{}
	s.startRedis(ctx, t)
	s.openDatabase(t, o)
	store, err := sqlstore.Open(ctx, s.dsn, "")
	if err != nil {
		t.Fatalf("open the store through the proxy: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: s.redisProxy.Addr, PoolSize: 64,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	s.env = sagatest.StartOn(t, store, redisstock.New(rdb, "", 0))
	return s
}

func (s *stack) startRedis(ctx context.Context, t *testing.T) {
	t.Helper()
	r, err := faults.StartRedis(ctx, testenv.StablePort(t, "127.0.0.1"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	s.redis = r
	p, err := faults.NewProxy("redis", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s.redisProxy = p
}

func (s *stack) openDatabase(t *testing.T, o stackOptions) {
	t.Helper()
	cfg, err := mysql.ParseDSN(testenv.MySQLDatabase(t))
	if err != nil {
		t.Fatalf("MYSQL_DSN: %v", err)
	}
	s.schema, s.user = cfg.DBName, cfg.User
	admin := cfg.Clone()
	admin.DBName = ""
	if s.admin, err = sql.Open("mysql", admin.FormatDSN()); err != nil {
		t.Fatalf("open the admin pool: %v", err)
	}
	t.Cleanup(func() { s.admin.Close() })
	p, err := faults.NewProxy("mysql", cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s.dbProxy = p
	s.dbAddr, cfg.Addr = cfg.Addr, p.Addr
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 10*time.Second, 10*time.Second
	for k, v := range o.dsnParams {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[k] = v
	}
	s.dsn = cfg.FormatDSN()
}

// rawDB is a database/sql pool on the test's database, directly (not through the proxy).
func (s *stack) rawDB(t *testing.T) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(s.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = s.dbAddr
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open the test database: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
