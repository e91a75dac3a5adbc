package platform

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsend"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// StartRefundSender starts the refund sender of a worker whose configuration names a provider
// (REFUND_PROVIDER_URL): the HTTP adapter to it (the local stack's in-process simulator is reached the same
// way), a worker of workflows.RefundTaskQueue with RefundSendWorkflow and its activities on store, and the
// Schedule that runs it every REFUND_SEND_INTERVAL with REFUND_PROVIDER_TIMEOUT in its input. Without a
// provider it starts nothing, says in the log that refunds are recorded but not sent, and returns a no-op
// stop. Metrics go on reg.
func StartRefundSender(ctx context.Context, c client.Client, store *sqlstore.Store, cfg config.Config, reg prometheus.Registerer,
	logger *slog.Logger) (stop func(), err error) {
	if !cfg.Refunds.SenderOn() {
		logger.Warn("refunds are recorded but not sent: REFUND_PROVIDER_URL is unset, so this worker runs no refund sender " +
			"(ordersaga_refunds_unsent counts the backlog; see docs/payments.md)")
		return func() {}, nil
	}
	p, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: cfg.Refunds.ProviderURL, Secret: cfg.Refunds.ProviderSecret,
		Timeout: cfg.Refunds.ProviderTimeout})
	if err != nil {
		return nil, err
	}
	m, err := refundsend.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("refund sender metrics: %w", err)
	}
	w := worker.New(c, workflows.RefundTaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: workflows.DefaultRefundParallel * 2,
		WorkerStopTimeout:                  cfg.Refunds.ProviderTimeout + 5*time.Second,
	})
	workflows.RegisterRefundSender(w, &activities.RefundSender{Sender: &refundsend.Sender{Outbox: store, Provider: p, Metrics: m}})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the refund sender's worker: %w", err)
	}
	if err := EnsureRefundSchedule(ctx, c, cfg.Refunds.SendInterval, workflows.RefundSendInput{ProviderTimeout: cfg.Refunds.ProviderTimeout}); err != nil {
		w.Stop()
		return nil, err
	}
	logger.Info("refund sender started", "task_queue", workflows.RefundTaskQueue, "provider", cfg.Refunds.ProviderURL,
		"interval", cfg.Refunds.SendInterval, "timeout", cfg.Refunds.ProviderTimeout)
	return w.Stop, nil
}
