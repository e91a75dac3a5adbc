package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// MoneySummary is what the money step of a run found (part of the run's result).
type MoneySummary struct {
	// Days holds each checked day's totals per currency (days without payments are left out).
	Days []sqlstore.MoneyTotals `json:"days"`
	// Findings counts the discrepancies the run saw (0: the books balance), ByKind the same per kind.
	Findings int            `json:"findings"`
	ByKind   map[string]int `json:"by_kind,omitempty"`
	// Recorded counts the findings written to money_anomalies by this run (the others were known).
	Recorded int `json:"recorded"`
	// RefundsUnsent counts every refund still to send: not marked sent by the provider's adapter, not refused.
	RefundsUnsent int64 `json:"refunds_unsent"`
	// RefundsRefused counts every refund the provider refused for good that waits for a person (requeue it,
	// or settle it outside ordersaga).
	RefundsRefused int64 `json:"refunds_refused"`
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
	return fmt.Sprintf("money: payments captured=%d applied=%d refunded=%d unsettled=%d in %d currencies; findings=%d (new %d) refunds_unsent=%d refunds_refused=%d",
		captured, applied, refunded, unsettled, len(currencies), m.Findings, m.Recorded, m.RefundsUnsent, m.RefundsRefused)
}

// refundFindingsLimit bounds the refunds of each kind (refund_unsent, refund_refused) one run reports; the
// gauges ordersaga_refunds_unsent and ordersaga_refunds_refused still count them all.
const refundFindingsLimit = 1000

// Money reconciles the money of the days UTC days up to and including now's (sqlstore.Store.CheckMoneyDay),
// then the refunds of every day (sqlstore.Store.CheckRefunds: recorded more than unsentAfter before now and
// neither sent nor refused, or refused by the provider), records what does not hold in money_anomalies once,
// and publishes the findings as metrics. unsentAfter ≤ 0 (a run started before the setting was passed down)
// reports refusals only. It repairs nothing: a money discrepancy is for a person. Safe to run again: the
// findings are keyed, the reads have no effect. progress, when set, is called after each day.
func Money(ctx context.Context, store *sqlstore.Store, m *Metrics, runID string, days int, unsentAfter time.Duration, now time.Time,
	progress func(day time.Time)) (MoneySummary, error) {
	today := sqlstore.DayStart(now)
	sum := MoneySummary{ByKind: map[string]int{}}
	for back := max(days, 1) - 1; back >= 0; back-- {
		day := today.AddDate(0, 0, -back)
		totals, found, err := store.CheckMoneyDay(ctx, day)
		if err != nil {
			return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
		}
		if err := sum.record(ctx, store, m, runID, found); err != nil {
			return MoneySummary{}, err
		}
		sum.Days = append(sum.Days, totals...)
		if progress != nil {
			progress(day)
		}
	}
	found, err := store.CheckRefunds(ctx, now, unsentAfter, refundFindingsLimit)
	if err != nil {
		return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
	}
	if err := sum.record(ctx, store, m, runID, found); err != nil {
		return MoneySummary{}, err
	}
	if sum.RefundsUnsent, err = store.CountPendingRefunds(ctx); err != nil {
		return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
	}
	if sum.RefundsRefused, err = store.CountRefusedRefunds(ctx); err != nil {
		return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
	}
	m.Money(sum)
	return sum, nil
}

// record writes the findings not recorded yet and counts them all in the summary.
func (sum *MoneySummary) record(ctx context.Context, store *sqlstore.Store, m *Metrics, runID string, found []sqlstore.MoneyFinding) error {
	recorded, err := store.RecordMoneyFindings(ctx, runID, found)
	if err != nil {
		return fmt.Errorf("reconcile money: %w", err)
	}
	sum.Findings += len(found)
	sum.Recorded += len(recorded)
	for _, f := range found {
		sum.ByKind[f.Kind]++
	}
	m.MoneyRecorded(recorded)
	return nil
}
