package faults_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/faults"
	"github.com/ordersaga/ordersaga/internal/reconcile"
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
	opts       stackOptions
	// metrics is the registry of the worker's reconciliation and reserve metrics (fallbacks, cold loads).
	metrics *prometheus.Registry
	// redisFailures counts the worker's Redis dials and commands that failed for want of a connection.
	redisFailures *failureCounter
}

// stackOptions changes how the stores are opened and the worker runs.
type stackOptions struct {
	// dsnParams are session variables set on every store connection (innodb_lock_wait_timeout, ...).
	dsnParams map[string]string
	// dbFallback turns the reserve's Redis-down fallback on (RESERVE_DB_FALLBACK, on by default in the
	// processes: internal/config); off, a reserve fails retryably until Redis answers.
	dbFallback bool
}

// failureCounter is a go-redis hook counting the dials and commands (after the client's own retries) that
// failed because Redis could not be reached (redisstock.ConnectionFailed): refused, reset, timed out.
type failureCounter struct{ n atomic.Int64 }

func (c *failureCounter) count(err error) {
	if err != nil && redisstock.ConnectionFailed(err) {
		c.n.Add(1)
	}
}

func (c *failureCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		c.count(err)
		return conn, err
	}
}

func (c *failureCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(err)
		return err
	}
}

func (c *failureCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		c.count(err)
		return err
	}
}

// requireRealStores skips a test that needs the real MariaDB and a redis-server binary: without MYSQL_DSN (the
// suite runs against the real services only), or without redis-server on a workstation. Under CI=true a
// missing redis-server fails the test, as ORDERSAGA_REQUIRE_SPIN does for the model check: CI must not pass
// a suite that never ran.
func requireRealStores(tb testing.TB) {
	tb.Helper()
	if !testenv.RealMySQL() {
		tb.Skip("store fault tests need the real MariaDB: set MYSQL_DSN (e.g. root@tcp(127.0.0.1:3306)/test)")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("store fault tests need the redis-server binary on PATH, and CI=true (apt-get install -y redis-server): %v", err)
		}
		tb.Skipf("store fault tests need the redis-server binary on PATH (apt-get install -y redis-server; under CI=true its absence fails): %v", err)
	}
}

// newStack starts redis-server, both proxies, the test's database and the saga on them.
func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	requireRealStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &stack{opts: o, metrics: prometheus.NewRegistry(), redisFailures: &failureCounter{}}
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
	rdb.AddHook(s.redisFailures)
	m, err := reconcile.NewMetrics(s.metrics)
	if err != nil {
		t.Fatal(err)
	}
	s.env = sagatest.StartWith(t, store, redisstock.New(rdb, "", 0), func(a *activities.Activities) {
		a.DBFallback, a.Metrics = o.dbFallback, m
	})
	return s
}

// Names of the worker's metrics that show what a Redis fault did (internal/reconcile/metrics.go).
const (
	metricFallbacks = "ordersaga_reserve_db_fallback_total"
	metricColdLoads = "ordersaga_reserve_cold_loads_total"
)

// metric is the value of one of the worker's counters (0 before it counted anything).
func (s *stack) metric(t testing.TB, name string) int {
	t.Helper()
	families, err := s.metrics.Gather()
	if err != nil {
		t.Fatalf("gather the worker's metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			total := 0.0
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return int(total)
		}
	}
	t.Fatalf("the worker has no metric %s", name)
	return 0
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
