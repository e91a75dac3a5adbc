package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
)

// ReconcileMoneyInput is the money step of a reconciliation run.
type ReconcileMoneyInput struct {
	RunID string
	// Days is how many UTC days, up to and including today, are checked (at least 1).
	Days int
}

// MoneySummary is what the money step of a run found (part of the run's result).
type MoneySummary struct {
	// Days holds each checked day's totals per currency (days without payments are left out).
	Days []MoneyTotals `json:"days"`
	// Findings counts the discrepancies the run saw (0: the books balance), ByKind the same per kind.
	Findings int            `json:"findings"`
	ByKind   map[string]int `json:"by_kind,omitempty"`
	// Recorded counts the findings written to money_anomalies by this run (the others were known).
	Recorded int `json:"recorded"`
	// RefundsUnsent counts every refund the provider's adapter has not marked sent yet.
	RefundsUnsent int64 `json:"refunds_unsent"`
}

func (m MoneySummary) String() string {
	var captured, applied, refunded, unsettled int64
	currencies := map[string]bool{}
	for _, d := range m.Days {
		captured += d.CapturedN
		applied += d.AppliedN
		refunded += d.RefundedN
		unsettled += d.UnsettledN
		currencies[d.Currency] = true
	}
	return fmt.Sprintf("money: payments captured=%d applied=%d refunded=%d unsettled=%d in %d currencies; findings=%d (new %d) refunds_unsent=%d",
		captured, applied, refunded, unsettled, len(currencies), m.Findings, m.Recorded, m.RefundsUnsent)
}

// ReconcileMoney reconciles the money of the last in.Days UTC days (Store.CheckMoneyDay), records what does
// not hold in money_anomalies once, and publishes the findings as metrics. It repairs nothing: a money
// discrepancy is for a person. Safe to run again: the findings are keyed, the reads have no effect.
func (a *Activities) ReconcileMoney(ctx context.Context, in ReconcileMoneyInput) (MoneySummary, error) {
	today := DayStart(time.Now())
	sum := MoneySummary{ByKind: map[string]int{}}
	for back := max(in.Days, 1) - 1; back >= 0; back-- {
		day := today.AddDate(0, 0, -back)
		totals, found, err := a.Store.CheckMoneyDay(ctx, day)
		if err != nil {
			return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
		}
		recorded, err := a.Store.RecordMoneyFindings(ctx, in.RunID, found)
		if err != nil {
			return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
		}
		sum.Days = append(sum.Days, totals...)
		sum.Findings += len(found)
		sum.Recorded += len(recorded)
		for _, f := range found {
			sum.ByKind[f.Kind]++
		}
		a.Metrics.moneyRecorded(recorded)
		activity.RecordHeartbeat(ctx, day.Format(DayLayout))
	}
	unsent, err := a.Store.CountPendingRefunds(ctx)
	if err != nil {
		return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
	}
	sum.RefundsUnsent = unsent
	a.Metrics.money(sum)
	logger := activity.GetLogger(ctx)
	args := []any{"run_id", in.RunID, "days", max(in.Days, 1), "findings", sum.Findings, "by_kind", sum.ByKind,
		"recorded", sum.Recorded, "refunds_unsent", sum.RefundsUnsent}
	if sum.Findings > 0 {
		logger.Warn("money reconciliation found discrepancies (see money_anomalies)", args...)
	} else {
		logger.Info("money reconciliation: captured = applied + refunded", args...)
	}
	return sum, nil
}
