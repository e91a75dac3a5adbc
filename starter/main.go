// Command starter runs the order API (docs/http-api.md): it places orders (starting OrderWorkflow), takes the
// payment webhook, serves inventory admin, health, readiness and metrics (the last two in detail on ADMIN_ADDR
// when it is set, else on the API), and at boot registers the search attributes and ensures the
// reconciliation Schedule. Configuration comes from the environment (docs/api.md).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/apiprocess"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

// drainTimeout bounds the graceful shutdown: requests in flight get this long to finish. It covers the
// longest wait of a handler (a reservation).
const drainTimeout = api.DefaultPlaceTimeout + 5*time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "starter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, _ []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	if err := cfg.RequireStores(); err != nil {
		return err
	}
	if err := cfg.RequireAPISecrets(); err != nil {
		return err
	}
	if err := apiprocess.Check(cfg); err != nil {
		return err
	}
	logger := platform.NewLogger(stdout, cfg.LogFormat, cfg.LogLevel)
	platform.RouteRedisLogs(logger)
	tracing, err := platform.StartTracing(ctx, cfg, "ordersaga-api")
	if err != nil {
		return err
	}
	defer tracing.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sdkMetrics, closeMetrics := platform.NewTemporalMetricsHandler(reg)
	defer closeMetrics.Close()

	redisStock, store, closeStores, err := platform.OpenStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStores()
	c, err := platform.DialTemporal(ctx, cfg, logger, sdkMetrics)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := platform.RegisterSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		return err
	}
	if err := ensureReconcileSchedule(ctx, c, cfg, logger); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HTTP_ADDR=%s: %w", cfg.HTTPAddr, err)
	}
	if cfg.AdminAddr == "" {
		logger.Warn("ADMIN_ADDR is not set: /metrics and the detailed /readyz are served on the public HTTP_ADDR; " +
			"set ADMIN_ADDR to serve them apart, where only operators reach them")
	}
	logger.Info("order API listening", "addr", ln.Addr().String(), "namespace", cfg.TemporalNamespace,
		"temporal", cfg.TemporalAddress, "temporal_tls", cfg.TemporalTLS, "db", store.Dialect(),
		"payment_timeout", cfg.PaymentTimeout.String())
	srv, err := apiprocess.Open(cfg, api.Deps{Logger: logger, Temporal: c, Store: store, Redis: redisStock, Registry: reg}, ln)
	if err != nil {
		return err
	}
	// The background work (the markers' backfill) stops with the process, and the process waits for it.
	return srv.Serve(ctx, drainTimeout)
}

// ensureReconcileSchedule makes sure the reconciliation Schedule exists at boot, with the interval and input of
// RECONCILE_INTERVAL, RECONCILE_BATCH and RECONCILE_GRACE; it is idempotent, so every starter runs it
// (internal/platform owns the Schedule).
func ensureReconcileSchedule(ctx context.Context, c client.Client, cfg config.Config, logger *slog.Logger) error {
	interval := platform.ReconcileInterval(cfg)
	if err := platform.EnsureScheduleWith(ctx, c, interval, platform.ReconcileInput(cfg)); err != nil {
		return fmt.Errorf("ensure reconciliation schedule: %w", err)
	}
	logger.Info("reconciliation schedule ensured", "interval", interval.String())
	if err := platform.EnsureCleanupSchedule(ctx, c, workflows.DefaultIdempotencyCleanupInterval, platform.CleanupInput(cfg)); err != nil {
		return fmt.Errorf("ensure idempotency cleanup schedule: %w", err)
	}
	logger.Info("idempotency cleanup schedule ensured", "interval", workflows.DefaultIdempotencyCleanupInterval.String(),
		"retention", cfg.IdempotencyRetention.String())
	return nil
}
