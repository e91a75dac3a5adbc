package platform

import (
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/workflows"
)

// ReconcileInput is the reconciliation workflow's input the configuration describes (RECONCILE_BATCH,
// RECONCILE_GRACE, REFUND_UNSENT_AFTER; unset: the workflow's defaults).
func ReconcileInput(cfg config.Config) workflows.ReconcileInput {
	return workflows.ReconcileInput{BatchSize: cfg.ReconcileBatch, Grace: cfg.ReconcileGrace,
		RefundUnsentAfter: cfg.Refunds.UnsentAfter}
}

// ReconcileInterval is the Schedule's interval: RECONCILE_INTERVAL, or workflows.DefaultReconcileInterval.
func ReconcileInterval(cfg config.Config) time.Duration {
	if cfg.ReconcileInterval > 0 {
		return cfg.ReconcileInterval
	}
	return workflows.DefaultReconcileInterval
}

// CleanupInput is the idempotency cleanup's input the configuration describes (IDEMPOTENCY_RETENTION).
func CleanupInput(cfg config.Config) workflows.IdempotencyCleanupInput {
	return workflows.IdempotencyCleanupInput{Retention: cfg.IdempotencyRetention}
}
