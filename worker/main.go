// Command worker runs the order saga's Temporal worker: OrderWorkflow and its activities, the only process
// that touches Redis and the database for orders. Configuration comes from the environment (README).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
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
	logger := platform.NewLogger(stdout, cfg.LogFormat, cfg.LogLevel)
	platform.RouteRedisLogs(logger)
	tracing, err := platform.StartTracing(ctx, cfg, "ordersaga-worker")
	if err != nil {
		return err
	}
	defer tracing.Close()
	redisStock, store, closeStores, err := platform.OpenStores(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStores()
	// One registry for METRICS_ADDR: reconciliation's and the idempotency cleanup's metrics, the Temporal SDK's
	// (temporal_*: schedule-to-start latency, workflow task failures, slots, pollers) and the process's.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sdkMetrics, closeMetrics := platform.NewTemporalMetricsHandler(reg)
	defer closeMetrics.Close()
	c, err := platform.DialTemporal(ctx, cfg, logger, sdkMetrics)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := platform.RegisterSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		return err
	}

	// Reconciliation (ReconcileWorkflow, started by the starter's Schedule) and the reserve's cold-start and
	// Redis-down paths run in this worker: they need the Temporal client (is an order's workflow gone?), their
	// metrics (served on METRICS_ADDR when set) and the fallback switch (RESERVE_DB_FALLBACK).
	acts, err := platform.NewActivities(c, redisStock, store, cfg, reg)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		stopMetrics, err := platform.ServeMetrics(cfg.MetricsAddr, reg, logger)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	w, err := platform.StartWorker(c, acts, platform.WorkerOptions(cfg))
	if err != nil {
		return err
	}
	// The refund sender (REFUND_PROVIDER_URL): its own task queue and Schedule; unset, the log says refunds
	// are not being sent.
	stopRefunds, err := platform.StartRefundSender(ctx, c, store, cfg, reg, logger)
	if err != nil {
		w.Stop()
		return err
	}
	defer stopRefunds()
	logger.Info("worker started", "task_queue", workflows.TaskQueue, "namespace", cfg.TemporalNamespace,
		"temporal", cfg.TemporalAddress, "temporal_tls", cfg.TemporalTLS, "db", store.Dialect(),
		"concurrency", cfg.WorkerConcurrency, "local_activity_concurrency", cfg.WorkerLocalActivityConcurrency,
		"metrics", cfg.MetricsAddr, "refund_sender", cfg.Refunds.SenderOn())
	<-ctx.Done()
	logger.Info("worker stopping: finishing in-flight tasks")
	w.Stop()
	return nil
}
