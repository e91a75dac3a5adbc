package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// stack is the running local stack: what start brought up, and how to stop it.
type stack struct {
	opts   options
	log    *slog.Logger
	logOut io.Writer

	ui       *devserver.UI // nil with TEMPORAL_ADDRESS
	rdb      redis.UniversalClient
	store    *sqlstore.Store
	client   client.Client
	registry *prometheus.Registry
	apiURL   string
	sqlite   string         // the order database file, "" on MySQL
	demo     []demoSKU      // the SKUs this start created
	skus     []inventoryRow // the inventory once started, for the banner

	closers []closer // in start order; stop runs them backwards
}

type closer struct {
	name string
	fn   func() error
}

func (s *stack) onStop(name string, fn func() error) { s.closers = append(s.closers, closer{name, fn}) }

// stop stops everything in the reverse order of start: the API first (no new orders), the worker before
// Redis is snapshotted, Temporal before the databases close.
func (s *stack) stop() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		c := s.closers[i]
		if err := c.fn(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.name, err))
		}
	}
	s.closers = nil
	return errors.Join(errs...)
}

// start brings the stack up; on failure it stops what it started.
func start(ctx context.Context, opts options, logOut io.Writer) (_ *stack, err error) {
	cfg := opts.cfg
	s := &stack{opts: opts, logOut: logOut, log: platform.NewLogger(logOut, cfg.LogFormat, cfg.LogLevel)}
	platform.RouteRedisLogs(s.log)
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	if err := s.checkPorts(); err != nil {
		return nil, err
	}
	if opts.dataDir != "" {
		if err := prepareDataDir(opts.dataDir); err != nil {
			return nil, err
		}
	}

	tracing, err := platform.StartTracing(ctx, cfg, "ordersaga-localstack")
	if err != nil {
		return nil, err
	}
	s.onStop("tracing", tracing.Close)
	if err := s.startRedis(ctx); err != nil {
		return nil, err
	}
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	if err := platform.TraceStores(cfg, s.rdb, s.store); err != nil {
		return nil, err
	}
	if err := s.startTemporal(ctx); err != nil {
		return nil, err
	}
	if err := s.startProvider(); err != nil {
		return nil, err
	}
	if err := s.startWorker(ctx); err != nil {
		return nil, err
	}
	rs := platform.RedisStock(s.rdb, cfg)
	if s.demo, err = prepareInventory(ctx, s.store, rs, opts.demo); err != nil {
		return nil, err
	}
	if s.skus, err = listInventory(ctx, s.store); err != nil {
		return nil, err
	}
	if err := s.ensureSchedule(ctx); err != nil {
		return nil, err
	}
	if !opts.externalTemporal {
		ui, err := devserver.StartUI(ctx, devserver.UIOptions{
			IP: localIP, Port: opts.uiPort, PortFlag: flagUIPort,
			TemporalAddress: cfg.TemporalAddress, DefaultNamespace: cfg.TemporalNamespace,
		})
		if err != nil {
			return nil, err
		}
		s.ui = ui
		s.onStop("temporal ui", func() error { ui.Stop(); return nil })
	}
	if err := s.startAPI(ctx, rs); err != nil {
		return nil, err
	}
	return s, nil
}

// checkPorts finds every taken port before anything starts, so the user fixes them all at once.
func (s *stack) checkPorts() error {
	o := s.opts
	type portCheck struct{ addr, flag string }
	checks := []portCheck{{o.cfg.HTTPAddr, flagHTTPAddr}}
	if !o.externalTemporal {
		checks = append(checks,
			portCheck{devserver.HostPort(localIP, o.temporalPort), flagTemporalPort},
			portCheck{devserver.HostPort(localIP, o.uiPort), flagUIPort})
	}
	if !o.externalRedis {
		checks = append(checks, portCheck{devserver.HostPort(localIP, o.redisPort), flagRedisPort})
	}
	if !o.externalProvider {
		checks = append(checks, portCheck{devserver.HostPort(localIP, o.providerPort), flagProviderPort})
	}
	var errs []error
	seen := map[string]string{}
	for _, c := range checks {
		if other, dup := seen[c.addr]; dup {
			errs = append(errs, fmt.Errorf("--%s and --%s both want %s", other, c.flag, c.addr))
			continue
		}
		seen[c.addr] = c.flag
		if err := devserver.CheckPort(c.addr, c.flag); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// prepareDataDir creates the data directory with a .gitignore of its own, so the default one inside a
// checkout never shows up in git status.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	ignore := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# the local stack's data (go run ./localstack)\n*\n"), 0o644); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	return nil
}

func (s *stack) startRedis(ctx context.Context) error {
	var dial platform.Dialer
	if !s.opts.externalRedis {
		r, err := s.startEmbeddedRedis()
		if err != nil {
			return err
		}
		dial = r.dial
	}
	rdb, err := platform.OpenRedis(ctx, s.opts.cfg, dial)
	if err != nil {
		return err
	}
	s.rdb = rdb
	s.onStop("redis client", rdb.Close)
	return nil
}

func (s *stack) startEmbeddedRedis() (*embeddedRedis, error) {
	snapshot := ""
	if s.opts.dataDir != "" {
		snapshot = filepath.Join(s.opts.dataDir, "redis-snapshot.json")
	}
	r, restored, err := startEmbeddedRedis(s.opts.cfg.RedisAddr, snapshot, s.log)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, &devserver.PortInUseError{Addr: s.opts.cfg.RedisAddr, Flag: flagRedisPort, Err: err}
		}
		return nil, err
	}
	s.onStop("embedded redis", r.Close)
	if restored {
		s.log.Info("embedded redis: restored the snapshot of the last clean stop")
	}
	return r, nil
}

func (s *stack) openStore(ctx context.Context) error {
	cfg := s.opts.cfg
	sqlitePath := cfg.SQLitePath
	if cfg.MySQLDSN == "" && sqlitePath == "" { // --ephemeral
		dir, err := os.MkdirTemp("", "ordersaga-localstack-")
		if err != nil {
			return fmt.Errorf("ephemeral database: %w", err)
		}
		s.onStop("ephemeral database directory", func() error { return os.RemoveAll(dir) })
		sqlitePath = filepath.Join(dir, "ordersaga.db")
	}
	store, err := sqlstore.OpenWithPool(ctx, cfg.MySQLDSN, sqlitePath, platform.SQLPool(cfg))
	if err != nil {
		return err
	}
	s.store = store
	if cfg.MySQLDSN == "" {
		s.sqlite = sqlitePath
	}
	s.onStop("database", store.Close)
	return nil
}

// serverLogger is the Temporal server's logger: it says a lot at info, so it logs at warn unless LOG_LEVEL
// is debug.
func (s *stack) serverLogger(logOut io.Writer) *slog.Logger {
	level := s.opts.cfg.LogLevel
	switch level {
	case "debug":
		level = "info"
	case "info":
		level = "warn"
	}
	return platform.NewLogger(logOut, s.opts.cfg.LogFormat, level).With("component", "temporal-server")
}

func (s *stack) startTemporal(ctx context.Context) error {
	if s.opts.externalTemporal {
		return nil
	}
	dbFile := ""
	if s.opts.dataDir != "" {
		dbFile = filepath.Join(s.opts.dataDir, "temporal.db")
	}
	t, err := devserver.StartTemporal(ctx, devserver.TemporalOptions{
		IP: localIP, FrontendPort: s.opts.temporalPort, DBFile: dbFile,
		Namespace: s.opts.cfg.TemporalNamespace, SearchAttributes: workflows.SearchAttributes(),
		Logger: s.serverLogger(s.logOut),
	})
	if err != nil {
		return err
	}
	s.onStop("temporal server", t.Stop)
	return nil
}

func (s *stack) startWorker(ctx context.Context) error {
	cfg := s.opts.cfg
	// One registry for the whole process: the API's metrics and the Temporal SDK's (client and worker), all
	// on the API's /metrics, as in the starter.
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sdkMetrics, closeMetrics := platform.NewTemporalMetricsHandler(s.registry)
	s.onStop("sdk metrics", closeMetrics.Close)
	c, err := platform.DialTemporal(ctx, cfg, s.log, sdkMetrics)
	if err != nil {
		return err
	}
	s.client = c
	s.onStop("temporal client", func() error { c.Close(); return nil })
	// The in-process server has them from its first start; this adds any added since, and covers
	// TEMPORAL_ADDRESS.
	if err := platform.RegisterSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		return err
	}
	acts, err := platform.NewActivities(c, platform.RedisStock(s.rdb, cfg), s.store, cfg, s.registry)
	if err != nil {
		return err
	}
	w, err := platform.StartWorker(c, acts, platform.WorkerOptions(cfg))
	if err != nil {
		return err
	}
	s.onStop("worker", func() error { w.Stop(); return nil })
	stopRefunds, err := platform.StartRefundSender(ctx, c, s.store, cfg, s.registry, s.log)
	if err != nil {
		return err
	}
	s.onStop("refund sender", func() error { stopRefunds(); return nil })
	return nil
}

// startProvider serves the refund provider simulator (internal/refundsim, what `paysim serve` runs) on
// --provider-port, checking the local stack's refund secret, unless REFUND_PROVIDER_URL names a provider.
func (s *stack) startProvider() error {
	if s.opts.externalProvider {
		return nil
	}
	sim, err := refundsim.New(refundsim.Options{Secrets: []string{s.opts.cfg.Refunds.ProviderSecret}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", devserver.HostPort(localIP, s.opts.providerPort))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return &devserver.PortInUseError{Addr: devserver.HostPort(localIP, s.opts.providerPort), Flag: flagProviderPort, Err: err}
		}
		return fmt.Errorf("--%s=%d: %w", flagProviderPort, s.opts.providerPort, err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s.onStop("refund provider simulator", func() error {
		sim.Close() // ends the requests a blackhole or a lost answer holds: the shutdown need not wait for them
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	})
	return nil
}

// listen opens the API's listener; a taken port names the flag.
func listen(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, &devserver.PortInUseError{Addr: addr, Flag: flag, Err: err}
		}
		return nil, fmt.Errorf("--%s=%s: %w", flag, addr, err)
	}
	return ln, nil
}
