package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// The secrets of a chaos run's processes (nothing outside the run uses them).
const (
	webhookSecret = "chaos-webhook-secret"
	adminToken    = "chaos-admin-token"
	refundSecret  = "chaos-refund-secret"
)

// The refund sender's settings of the run's workers: a refund recorded now is sent within about a second,
// and a provider that does not answer (the blackhole) is given up on after 3 s and asked again.
const (
	refundSendInterval = time.Second
	refundTimeout      = 3 * time.Second
)

// paymentTimeout is ORDER_PAYMENT_TIMEOUT of the run: short, so that unpaid orders expire during it.
const paymentTimeout = 5 * time.Second

// topology is a running multi-process stack: its processes and the chaos run's own view of the stores.
type topology struct {
	stack    stack
	dir      string
	dbName   string
	adminDSN string // MYSQL_DSN without the run's database, to drop it
	dsn      string // MYSQL_DSN of the run's database
	redis    string
	tport    int

	temporal *proc
	apis     []*proc
	apiURLs  []string
	workers  []*proc
	paysim   *proc  // the refund provider simulator (`paysim serve`)
	provider string // its base URL, the workers' REFUND_PROVIDER_URL
	redisSrv *proc  // nil when CHAOS_REDIS_ADDR names an external Redis, or with a cluster
	// cluster is the run's own Redis Cluster (stack.RedisCluster), whose nodes the cluster faults kill; nil
	// otherwise. redis is then its nodes' addresses, comma-separated.
	cluster  *redislab.Cluster
	mysqlSrv *proc  // the run's own MariaDB (-own-mysql); nil on MYSQL_DSN's server
	mysqlDSN string // the server's DSN without a database: MYSQL_DSN, or the own server's
	mysqlAdr string // the own server's address

	store *sqlstore.Store
	rs    *redisstock.Store
	close func()
	log   io.Writer
}

// stack is what a run's topology starts of its own besides its processes.
type stack struct {
	OwnMySQL     bool // a MariaDB server (else MYSQL_DSN's)
	RedisCluster bool // a Redis Cluster of 3 masters with a replica each (else one redis-server, or CHAOS_REDIS_ADDR)
}

// startTopology builds the binaries, creates the run's database (on a MariaDB server of its own with
// OwnMySQL), starts Redis (startRedis), the Temporal server, the refund provider simulator, two workers (each
// sending refunds to the simulator) and two APIs, and waits until each one serves.
func startTopology(ctx context.Context, dir string, st stack, log io.Writer) (*topology, error) {
	t := &topology{dir: dir, log: log, stack: st, mysqlDSN: os.Getenv("MYSQL_DSN")}
	if t.mysqlDSN == "" {
		t.mysqlDSN = "root@tcp(127.0.0.1:3306)/"
	}
	steps := []func(context.Context) error{t.build, t.createDatabase, t.startRedis, t.openStores, t.startTemporal, t.startPaysim, t.startWorkers, t.startAPIs}
	if st.OwnMySQL {
		steps = append([]func(context.Context) error{t.startMySQL}, steps...)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			t.shutdown(false)
			return nil, err
		}
	}
	return t, nil
}

// build builds the starter, worker and paysim binaries into the run's directory.
func (t *topology) build(ctx context.Context) error {
	start := time.Now()
	if _, _, _, err := buildBinaries(ctx, t.dir); err != nil {
		return err
	}
	fmt.Fprintf(t.log, "chaos: built starter, worker and paysim in %s\n", time.Since(start).Round(time.Second))
	return nil
}

// createDatabase creates chaos_<unix nanos> on the run's server: MYSQL_DSN's (default
// root@tcp(127.0.0.1:3306)/), or its own.
func (t *topology) createDatabase(ctx context.Context) error {
	cfg, err := mysql.ParseDSN(t.mysqlDSN)
	if err != nil {
		return fmt.Errorf("MYSQL_DSN: %w", err)
	}
	t.dbName = "chaos_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg.DBName = ""
	t.adminDSN = cfg.FormatDSN()
	if err := execSQL(ctx, t.adminDSN, "CREATE DATABASE "+t.dbName); err != nil {
		return fmt.Errorf("create database %s: %w", t.dbName, err)
	}
	cfg.DBName = t.dbName
	t.dsn = cfg.FormatDSN()
	fmt.Fprintf(t.log, "chaos: database %s\n", t.dbName)
	return nil
}

func execSQL(ctx context.Context, dsn, stmt string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// startRedis starts the run's Redis: a Redis Cluster of its own with stack.RedisCluster (startCluster); else
// redis-server on a free port without persistence, unless CHAOS_REDIS_ADDR is set (not REDIS_ADDR: a run
// needs a Redis of its own that it may restart, and CI sets REDIS_ADDR for the other tests).
func (t *topology) startRedis(ctx context.Context) error {
	if t.stack.RedisCluster {
		return t.startCluster(ctx)
	}
	if addr := os.Getenv("CHAOS_REDIS_ADDR"); addr != "" {
		t.redis = addr
		return nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found (or set CHAOS_REDIS_ADDR): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	t.redis = "127.0.0.1:" + strconv.Itoa(port)
	t.redisSrv = &proc{name: "redis", bin: bin, log: filepath.Join(t.dir, "redis.log"),
		args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}}
	return t.restartRedis(ctx)
}

// startCluster starts the run's own Redis Cluster (redislab: 3 masters, 1 replica each, no persistence), which
// the cluster faults may kill nodes of; CHAOS_REDIS_ADDR does not replace it.
func (t *topology) startCluster(ctx context.Context) error {
	start := time.Now()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		return fmt.Errorf("start the run's Redis Cluster: %w", err)
	}
	t.cluster = c
	t.redis = strings.Join(c.Addrs(), ",")
	fmt.Fprintf(t.log, "chaos: Redis Cluster of 3 masters and 3 replicas on %s (nodes' logs in %s) in %s\n", t.redis, c.Dir(), time.Since(start).Round(time.Millisecond))
	return nil
}

// restartRedis starts the run's redis-server (again) on its port and waits until it accepts connections.
func (t *topology) restartRedis(ctx context.Context) error {
	if err := t.redisSrv.start(); err != nil {
		return err
	}
	return waitTCP(ctx, t.redis, t.redisSrv, 10*time.Second)
}

// mariadbBinaries finds mariadb-install-db and mariadbd (or mysqld), on PATH or in /usr/sbin.
func mariadbBinaries() (install, server string, err error) {
	find := func(names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			if p := filepath.Join("/usr/sbin", n); fileExists(p) {
				return p
			}
		}
		return ""
	}
	install, server = find("mariadb-install-db", "mysql_install_db"), find("mariadbd", "mysqld")
	if install == "" || server == "" {
		return "", "", errors.New("-own-mysql: mariadb-install-db and mariadbd not found (apt-get install -y mariadb-server)")
	}
	return install, server, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// startMySQL initialises a data directory in the run's directory and starts a MariaDB server of the run's
// own on a free port (InnoDB with its defaults: every commit flushed), which the mysql_restart fault may
// SIGKILL. root has no password; the server listens on 127.0.0.1 only.
func (t *topology) startMySQL(ctx context.Context) error {
	install, server, err := mariadbBinaries()
	if err != nil {
		return err
	}
	data := filepath.Join(t.dir, "mysql-data")
	cmd := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+data, "--user="+currentUser(),
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", install, err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	t.mysqlSrv = &proc{name: "mysql", bin: server, log: filepath.Join(t.dir, "mysql.log"),
		args: []string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--socket=" + filepath.Join(t.dir, "mysql.sock"), "--user=" + currentUser(), "--skip-name-resolve",
			"--innodb-buffer-pool-size=128M", "--max-connections=500"}}
	t.mysqlAdr = "127.0.0.1:" + strconv.Itoa(port)
	t.mysqlDSN = "root@tcp(" + t.mysqlAdr + ")/"
	if err := t.restartMySQL(ctx); err != nil {
		return err
	}
	fmt.Fprintf(t.log, "chaos: own MariaDB on %s\n", t.mysqlAdr)
	return nil
}

// restartMySQL starts the run's own server (again) on its data directory and waits until it accepts
// connections (after a SIGKILL, InnoDB's crash recovery runs first).
func (t *topology) restartMySQL(ctx context.Context) error {
	if err := t.mysqlSrv.start(); err != nil {
		return err
	}
	return waitTCP(ctx, t.mysqlAdr, t.mysqlSrv, 60*time.Second)
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// openStores opens the run's stores, which migrates the database once before any process starts.
func (t *topology) openStores(ctx context.Context) error {
	cfg, err := t.storeConfig(os.Environ())
	if err != nil {
		return fmt.Errorf("chaos config: %w", err)
	}
	t.rs, t.store, t.close, err = platform.OpenStores(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open the run's stores: %w", err)
	}
	return nil
}

// commonEnvMap is the environment every worker and API gets. Every variable that chooses a form of Redis is
// in it, the run's form set and the others empty: an empty value removes the variable the process would
// inherit (childEnv), so that a REDIS_ADDR of the caller's (CI sets one) does not sit beside the run's cluster.
func (t *topology) commonEnvMap() map[string]string {
	m := map[string]string{
		"TEMPORAL_ADDRESS":      "127.0.0.1:" + strconv.Itoa(t.tport),
		"REDIS_ADDR":            t.redis,
		"REDIS_CLUSTER_ADDRS":   "",
		"REDIS_SENTINEL_ADDRS":  "",
		"REDIS_SENTINEL_MASTER": "",
		"MYSQL_DSN":             t.dsn,
		"LOG_FORMAT":            "json",
		"LOG_LEVEL":             "warn",
	}
	if t.cluster != nil {
		m["REDIS_ADDR"], m["REDIS_CLUSTER_ADDRS"] = "", t.redis
	}
	return m
}

// storeConfig is the configuration the run's workers and APIs read from their environment (inherited, with
// commonEnvMap over it), for the run's own view of the stores: a variable of the caller's that the processes
// see (REDIS_KEY_PREFIX, the Redis credentials) reaches the run's checks too.
func (t *topology) storeConfig(inherited []string) (config.Config, error) {
	env := map[string]string{}
	for _, kv := range childEnv(inherited, envList(t.commonEnvMap())) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return config.FromEnv(func(k string) string { return env[k] })
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// startTemporal starts the Temporal server process: this binary again, subcommand temporal-server.
func (t *topology) startTemporal(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("temporal server: this binary: %w", err)
	}
	if t.tport, err = freePort(); err != nil {
		return err
	}
	t.temporal = &proc{name: "temporal", bin: self, log: filepath.Join(t.dir, "temporal.log"),
		args: []string{"temporal-server", "--db", filepath.Join(t.dir, "temporal.db"), "--port", strconv.Itoa(t.tport)}}
	return t.restartTemporal(ctx)
}

// restartTemporal starts the server process (again) on the same file and port and waits for its frontend.
func (t *topology) restartTemporal(ctx context.Context) error {
	if err := t.temporal.start(); err != nil {
		return err
	}
	return waitTCP(ctx, "127.0.0.1:"+strconv.Itoa(t.tport), t.temporal, 90*time.Second)
}

// startPaysim starts the refund provider simulator (`paysim serve`, its secret from the environment: not on
// its command line) on a free port and waits until it listens.
func (t *topology) startPaysim(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	t.provider = "http://" + addr
	t.paysim = &proc{name: "paysim", bin: filepath.Join(t.dir, "paysim"), log: filepath.Join(t.dir, "paysim.log"),
		args: []string{"serve", "-addr", addr}, env: []string{"REFUND_PROVIDER_SECRET=" + refundSecret}}
	if err := t.paysim.start(); err != nil {
		return err
	}
	if err := waitTCP(ctx, addr, t.paysim, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(t.log, "chaos: refund provider simulator on %s\n", t.provider)
	return nil
}

// workerEnvMap is a worker's environment: the common one and the refund sender's, to the run's simulator.
func (t *topology) workerEnvMap() map[string]string {
	m := t.commonEnvMap()
	m["REFUND_PROVIDER_URL"] = t.provider
	m["REFUND_PROVIDER_SECRET"] = refundSecret
	m["REFUND_SEND_INTERVAL"] = refundSendInterval.String()
	m["REFUND_PROVIDER_TIMEOUT"] = refundTimeout.String()
	return m
}

// startWorkers starts two worker processes.
func (t *topology) startWorkers(ctx context.Context) error {
	bin := filepath.Join(t.dir, "worker")
	env := envList(t.workerEnvMap())
	for i := range 2 {
		w := &proc{name: fmt.Sprintf("worker-%d", i), bin: bin, env: env, log: filepath.Join(t.dir, fmt.Sprintf("worker-%d.log", i))}
		if err := w.start(); err != nil {
			return err
		}
		t.workers = append(t.workers, w)
	}
	return nil
}

// startAPIs starts two order API processes and waits until each answers /healthz.
func (t *topology) startAPIs(ctx context.Context) error {
	bin := filepath.Join(t.dir, "starter")
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			return err
		}
		m := t.commonEnvMap()
		m["HTTP_ADDR"] = "127.0.0.1:" + strconv.Itoa(port)
		m["PAYMENT_WEBHOOK_SECRET"] = webhookSecret
		m["ADMIN_TOKEN"] = adminToken
		m["ORDER_PAYMENT_TIMEOUT"] = paymentTimeout.String()
		m["RECONCILE_INTERVAL"] = "10s"
		m["RECONCILE_GRACE"] = "10s"
		a := &proc{name: fmt.Sprintf("api-%d", i), bin: bin, env: envList(m), log: filepath.Join(t.dir, fmt.Sprintf("api-%d.log", i))}
		if err := a.start(); err != nil {
			return err
		}
		t.apis = append(t.apis, a)
		t.apiURLs = append(t.apiURLs, "http://"+m["HTTP_ADDR"])
		if err := t.waitAPI(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// waitAPI waits until API i listens.
func (t *topology) waitAPI(ctx context.Context, i int) error {
	addr := t.apiURLs[i][len("http://"):]
	return waitTCP(ctx, addr, t.apis[i], 90*time.Second)
}

// shutdown stops every process (SIGTERM, then SIGKILL), closes the stores, and drops the database when
// dropDB is set.
func (t *topology) shutdown(dropDB bool) {
	for _, p := range append(append([]*proc{}, t.apis...), t.workers...) {
		p.stop(10 * time.Second)
	}
	if t.temporal != nil {
		t.temporal.stop(10 * time.Second)
	}
	if t.paysim != nil {
		t.paysim.stop(10 * time.Second)
	}
	if t.redisSrv != nil {
		t.redisSrv.stop(5 * time.Second)
	}
	if t.cluster != nil {
		t.cluster.Stop()
	}
	if t.close != nil {
		t.close()
	}
	if dropDB && t.dbName != "" && t.mysqlSrv == nil { // the own server's data goes with the run's directory
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execSQL(ctx, t.adminDSN, "DROP DATABASE IF EXISTS "+t.dbName); err != nil {
			fmt.Fprintf(t.log, "chaos: drop database %s: %v\n", t.dbName, err)
		}
	}
	if t.mysqlSrv != nil {
		t.mysqlSrv.stop(30 * time.Second)
	}
}
