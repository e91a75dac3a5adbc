package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/retention"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// NewLogger builds the process logger: JSON in production, text in the local stack.
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// DialTemporal connects a Temporal client with the SDK's logger bridged to slog, the TLS, mTLS and API key of
// the configuration (TEMPORAL_TLS*, TEMPORAL_API_KEY) and, when metrics is set, the SDK's metrics on it (the
// one way every process dials Temporal).
func DialTemporal(ctx context.Context, cfg config.Config, logger *slog.Logger, metrics client.MetricsHandler) (client.Client, error) {
	opts, err := TemporalOptions(cfg, logger, metrics)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial temporal at TEMPORAL_ADDRESS=%s (tls %t): %w", cfg.TemporalAddress, cfg.TemporalTLS, err)
	}
	return c, nil
}

// TemporalOptions are the client options DialTemporal dials with.
func TemporalOptions(cfg config.Config, logger *slog.Logger, metrics client.MetricsHandler) (client.Options, error) {
	tc, err := cfg.TemporalTLSConfig()
	if err != nil {
		return client.Options{}, fmt.Errorf("dial temporal: %w", err)
	}
	opts := client.Options{
		HostPort:          cfg.TemporalAddress,
		Namespace:         cfg.TemporalNamespace,
		Logger:            tlog.NewStructuredLogger(logger.With("component", "temporal")),
		MetricsHandler:    metrics,
		ConnectionOptions: client.ConnectionOptions{TLS: tc},
	}
	if cfg.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(cfg.TemporalAPIKey)
	}
	if cfg.TracingOn() {
		i, err := TemporalInterceptor()
		if err != nil {
			return client.Options{}, err
		}
		opts.Interceptors = append(opts.Interceptors, i)
	}
	return opts, nil
}

// Dialer makes a connection to Redis instead of TCP to REDIS_ADDR (the local stack's embedded Redis, in the
// same process).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// defaultRedisPool is the pool of a configuration without REDIS_POOL_SIZE (a config.Config built by hand).
const defaultRedisPool = 128

// RedisOptions are the options of every Redis client of the module, whatever the form of the connection
// (config.RedisForm): the addresses (REDIS_ADDR's server, the cluster's seeds or the sentinels) with the
// master's name, the credentials, TLS and a pool of REDIS_POOL_SIZE connections per node, 8 of them kept
// idle. The TLS CA file is read here.
func RedisOptions(cfg config.Config) (*redis.UniversalOptions, error) {
	tc, err := cfg.RedisTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	_, addrs := cfg.RedisForm()
	pool := cfg.RedisPoolSize
	if pool <= 0 {
		pool = defaultRedisPool
	}
	return &redis.UniversalOptions{
		Addrs:            addrs,
		MasterName:       cfg.RedisSentinelMaster,
		Username:         cfg.RedisUsername,
		Password:         cfg.RedisPassword,
		SentinelPassword: cfg.RedisSentinelPassword,
		TLSConfig:        tc,
		PoolSize:         pool,
		MinIdleConns:     min(8, pool),
	}, nil
}

// newRedis builds the client of cfg's form without dialing: a plain client on REDIS_ADDR, a cluster client
// on REDIS_CLUSTER_ADDRS (even with one seed, where redis.NewUniversalClient would build a plain client) or a
// failover client on REDIS_SENTINEL_ADDRS. dial, when not nil, makes the connections.
func newRedis(cfg config.Config, dial Dialer) (redis.UniversalClient, error) {
	opts, err := RedisOptions(cfg)
	if err != nil {
		return nil, err
	}
	if dial != nil {
		opts.Dialer = dial
	}
	form, _ := cfg.RedisForm()
	switch form {
	case config.RedisServer:
		return redis.NewClient(opts.Simple()), nil
	case config.RedisCluster:
		co := opts.Cluster()
		co.ClusterStateReloadInterval = config.RedisClusterStateReload
		return redis.NewClusterClient(co), nil
	case config.RedisSentinel:
		return redis.NewFailoverClient(opts.Failover()), nil
	}
	return nil, fmt.Errorf("redis: %w", config.ErrRedisNotSet)
}

// OpenRedis connects to Redis in the form of the configuration (newRedis) and checks it answers, within 5
// seconds; the error names the form's variable and its addresses, never a password.
func OpenRedis(ctx context.Context, cfg config.Config, dial Dialer) (redis.UniversalClient, error) {
	rdb, err := newRedis(cfg, dial)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis at %s: %w", cfg.RedisWhere(), err)
	}
	return rdb, nil
}

// SQLPool is the database pool of the configuration (MYSQL_MAX_OPEN_CONNS, MYSQL_MAX_IDLE_CONNS,
// MYSQL_CONN_MAX_LIFETIME).
func SQLPool(cfg config.Config) sqlstore.Pool {
	p := sqlstore.Pool{MaxOpenConns: cfg.MySQLMaxOpenConns, MaxIdleConns: cfg.MySQLMaxIdleConns, ConnMaxLifetime: cfg.MySQLConnMaxLifetime}
	if p.MaxIdleConns == 0 && cfg.MySQLMaxOpenConns > 0 {
		p.MaxIdleConns = -1 // MYSQL_MAX_IDLE_CONNS=0: none kept idle (the zero field would mean the default)
	}
	return p
}

// OpenStores opens Redis and the database from the configuration (both must be set).
func OpenStores(ctx context.Context, cfg config.Config) (*redisstock.Store, *sqlstore.Store, func(), error) {
	rdb, err := OpenRedis(ctx, cfg, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	store, err := sqlstore.OpenWithPool(ctx, cfg.MySQLDSN, cfg.SQLitePath, SQLPool(cfg))
	if err != nil {
		rdb.Close()
		return nil, nil, nil, err
	}
	if err := TraceStores(cfg, rdb, store); err != nil {
		store.Close()
		rdb.Close()
		return nil, nil, nil, err
	}
	closeFn := func() {
		store.Close()
		rdb.Close()
	}
	return RedisStock(rdb, cfg), store, closeFn, nil
}

// RedisStock is the processes' Redis store on rdb: REDIS_KEY_PREFIX, and the idempotency markers acknowledged
// by REDIS_MARKER_REPLICAS replicas.
func RedisStock(rdb redis.UniversalClient, cfg config.Config) *redisstock.Store {
	return redisstock.New(rdb, cfg.RedisKeyPrefix, 0).AckMarkers(cfg.RedisMarkerReplicas)
}

// RegisterSearchAttributes adds the order search attributes to a namespace; ones that exist are kept.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	want := workflows.SearchAttributes()
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of %s: %w", namespace, err)
	}
	for name := range have.GetCustomAttributes() {
		delete(want, name)
	}
	if len(want) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: want,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes to %s: %w", namespace, err)
	}
	return nil
}

// WorkerOptions are the order worker's options: concurrency from WORKER_CONCURRENCY, the local activities
// of the reservation's hot path bounded by WORKER_LOCAL_ACTIVITY_CONCURRENCY (the SDK's default is 1000,
// far more than the database pool serves), and a stop timeout so in-flight activities finish on SIGTERM.
func WorkerOptions(cfg config.Config) worker.Options {
	return worker.Options{
		MaxConcurrentActivityExecutionSize:      cfg.WorkerConcurrency,
		MaxConcurrentWorkflowTaskExecutionSize:  cfg.WorkerConcurrency,
		MaxConcurrentLocalActivityExecutionSize: cfg.WorkerLocalActivityConcurrency,
		WorkerStopTimeout:                       15 * time.Second,
	}
}

// NewActivities builds the order worker's activities on the stores, with what reconciliation and the
// reserve's fallback need: the probe of order workflows on c, the metrics (registered on reg) and the
// fallback switch (RESERVE_DB_FALLBACK).
func NewActivities(c client.Client, rs *redisstock.Store, st *sqlstore.Store, cfg config.Config, reg prometheus.Registerer) (*activities.Activities, error) {
	m, err := reconcile.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("reconcile metrics: %w", err)
	}
	cm, err := retention.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("idempotency cleanup metrics: %w", err)
	}
	return &activities.Activities{Redis: rs, Store: st, DBFallback: cfg.ReserveDBFallback, Probe: Probe{Client: c}, Metrics: m,
		CleanupMetrics: cm}, nil
}

// NewWorker builds the order worker on c: every workflow of workflows/ and acts registered on the task
// queue, every failed attempt of a local activity logged (LocalActivityFailures, innermost after opts'
// interceptors), and its workflow task pollers as WithOrderPollers sets them.
func NewWorker(c client.Client, acts *activities.Activities, opts worker.Options) worker.Worker {
	opts = WithOrderPollers(opts)
	opts.Interceptors = append(append([]interceptor.WorkerInterceptor(nil), opts.Interceptors...), &LocalActivityFailures{})
	w := worker.New(c, workflows.TaskQueue, opts)
	workflows.Register(w, acts)
	return w
}

// orderPollers is the most polls for workflow tasks the order worker keeps open on each of its queues (the
// normal one and its sticky one).
const orderPollers = 2

// WithOrderPollers is opts with the order worker's workflow task pollers, unless opts sets how they poll
// (MaxConcurrentWorkflowTaskPollers or WorkflowTaskPollerBehavior). With the SDK's default (two pollers, each
// choosing its queue per poll), every poll goes to the worker's sticky queue while that queue has a backlog:
// the timers of orders already in the worker's cache (a wave of payment deadlines: every order of the sale's
// first minutes expires together) fill it, and the first task of a new order, which waits on the task
// queue's normal queue, is not polled until the wave is through. A sale that outlasts the payment window then
// accepts nothing, and its buyers time out (BENCHMARKS.md, "The expiry wave"). Autoscaling pollers keep a poll
// open on each queue whatever the other's backlog, so new orders and expiries share the worker. The benchmark
// gives its bare workflows' workers the same pollers.
//
// At most orderPollers polls of each queue: the sticky queue's polls, growing with its backlog toward their
// most, hold back the normal queue's second poll until they reach it, so with the SDK's most (100) a wave
// still left new orders one poll and some of their buyers timed out; with two of each none did.
func WithOrderPollers(opts worker.Options) worker.Options {
	if opts.WorkflowTaskPollerBehavior == nil && opts.MaxConcurrentWorkflowTaskPollers == 0 {
		opts.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{
			InitialNumberOfPollers: orderPollers, MaximumNumberOfPollers: orderPollers,
		})
	}
	return opts
}

// StartWorker builds (NewWorker) and starts the order worker on c. The worker command, the local stack and
// the tests' saga all start it here; the benchmark builds it with NewWorker.
func StartWorker(c client.Client, acts *activities.Activities, opts worker.Options) (worker.Worker, error) {
	w := NewWorker(c, acts, opts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return w, nil
}
