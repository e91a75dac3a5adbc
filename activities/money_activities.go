package activities

import (
	"context"
	"time"

	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"go.temporal.io/sdk/activity"
)

// ReconcileMoneyInput is the money step of a reconciliation run.
type ReconcileMoneyInput struct {
	RunID string
	// Days is how many UTC days, up to and including today, are checked (at least 1).
	Days int
	// RefundUnsentAfter: a refund recorded longer ago and neither sent nor refused is a finding
	// (refund_unsent). 0 (the input of a run started by a release before the setting) reports refusals only.
	RefundUnsentAfter time.Duration
}

// MoneySummary is what the money step of a run found (part of the run's result).
type MoneySummary = reconcile.MoneySummary

// ReconcileMoney reconciles the money of the last in.Days UTC days (reconcile.Money): it records what does
// not hold in money_anomalies once and publishes the findings as metrics; it repairs nothing.
func (a *Activities) ReconcileMoney(ctx context.Context, in ReconcileMoneyInput) (MoneySummary, error) {
	sum, err := reconcile.Money(ctx, a.Store, a.Metrics, in.RunID, in.Days, in.RefundUnsentAfter, time.Now(), func(day time.Time) {
		activity.RecordHeartbeat(ctx, day.Format(sqlstore.DayLayout))
	})
	if err != nil {
		return MoneySummary{}, err
	}
	logger := activity.GetLogger(ctx)
	args := []any{"run_id", in.RunID, "days", max(in.Days, 1), "findings", sum.Findings, "by_kind", sum.ByKind,
		"recorded", sum.Recorded, "refunds_unsent", sum.RefundsUnsent, "refunds_refused", sum.RefundsRefused}
	if sum.Findings > 0 {
		logger.Warn("money reconciliation found discrepancies (see money_anomalies)", args...)
	} else {
		logger.Info("money reconciliation: captured = applied + refunded", args...)
	}
	return sum, nil
}
