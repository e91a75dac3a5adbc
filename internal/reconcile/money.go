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

// Money reconciles the money of the days UTC days up to and including now's (sqlstore.Store.CheckMoneyDay),
// records what does not hold in money_anomalies once, and publishes the findings as metrics. It repairs
// nothing: a money discrepancy is for a person. Safe to run again: the findings are keyed, the reads have no
// effect. progress, when set, is called after each day.
func Money(ctx context.Context, store *sqlstore.Store, m *Metrics, runID string, days int, now time.Time, progress func(day time.Time)) (MoneySummary, error) {
	today := sqlstore.DayStart(now)
	sum := MoneySummary{ByKind: map[string]int{}}
	for back := max(days, 1) - 1; back >= 0; back-- {
		day := today.AddDate(0, 0, -back)
		totals, found, err := store.CheckMoneyDay(ctx, day)
		if err != nil {
			return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
		}
		recorded, err := store.RecordMoneyFindings(ctx, runID, found)
		if err != nil {
			return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
		}
		sum.Days = append(sum.Days, totals...)
		sum.Findings += len(found)
		sum.Recorded += len(recorded)
		for _, f := range found {
			sum.ByKind[f.Kind]++
		}
		m.MoneyRecorded(recorded)
		if progress != nil {
			progress(day)
		}
	}
	unsent, err := store.CountPendingRefunds(ctx)
	if err != nil {
		return MoneySummary{}, fmt.Errorf("reconcile money: %w", err)
	}
	sum.RefundsUnsent = unsent
	m.Money(sum)
	return sum, nil
}
