package sqlstore

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Kinds of money_anomalies rows: what the money reconciliation found. None is repaired automatically: money
// is a person's to move; the row and the metric ordersaga_reconcile_money_discrepancies say where to look.
const (
	// KindMoneyUnbalanced: on a day, in a currency, captured ≠ applied + refunded (subject "day/currency").
	KindMoneyUnbalanced = "money_unbalanced"
	// KindPaymentUnsettled: a captured payment neither applied nor refunded (subject: the event ID).
	KindPaymentUnsettled = "payment_unsettled"
	// KindAppliedNotPaid: an applied payment whose order is not PAID by it — unknown, not PAID, or PAID by
	// another event (charged twice) (subject: the event ID).
	KindAppliedNotPaid = "applied_not_paid"
	// KindAppliedAmount: an applied payment whose amount or currency is not its PAID order's (subject: the
	// event ID).
	KindAppliedAmount = "applied_amount_mismatch"
	// KindPaidWithoutPayment: a PAID order without its applied payment (subject: the order ID).
	KindPaidWithoutPayment = "paid_without_payment"
	// KindPaymentAmountOutOfRange: a payment whose amount is outside 0 to ordersaga.MaxAmountCents, which the
	// payments store refuses since the bound: a row from before it, or written by hand (subject: the event ID).
	KindPaymentAmountOutOfRange = "payment_amount_out_of_range"
	// KindRefundUnsent: a refund recorded longer ago than the threshold (REFUND_UNSENT_AFTER) and neither sent
	// to the provider nor refused by it: the sender is off, down or failing (subject: the event ID).
	KindRefundUnsent = "refund_unsent"
	// KindRefundRefused: a refund the provider refused for good, not requeued by a person since (subject: the
	// event ID).
	KindRefundRefused = "refund_refused"
)

// MoneyKinds lists the kinds above (the metric's label values).
var MoneyKinds = []string{KindMoneyUnbalanced, KindPaymentUnsettled, KindAppliedNotPaid, KindAppliedAmount, KindPaidWithoutPayment,
	KindPaymentAmountOutOfRange, KindRefundUnsent, KindRefundRefused}

// maxMoneyFindings bounds the rows one query of one day lists; the day's totals still count every payment.
const maxMoneyFindings = 1000

// MoneyFinding is one discrepancy; (Kind, Subject) names it, so it is recorded once however many runs see it.
type MoneyFinding struct {
	Kind     string `json:"kind"`
	Subject  string `json:"subject"`
	Day      string `json:"day"`
	OrderID  string `json:"order_id,omitempty"`
	EventID  string `json:"event_id,omitempty"`
	Currency string `json:"currency,omitempty"`
	Expected *int64 `json:"expected_cents,omitempty"`
	Observed *int64 `json:"observed_cents,omitempty"`
	Detail   string `json:"detail"`
}

// MoneyAnomalyRow is a MoneyFinding as stored: the run that first found it, and when.
type MoneyAnomalyRow struct {
	ID int64
	MoneyFinding
	RunID     string
	CreatedAt time.Time
}

// CheckMoneyDay reconciles the money of one UTC day: the day's totals per currency and what does not hold —
// captured = applied + refunded per currency; every payment applied or refunded; every applied (kept)
// payment the one that PAID its order, for the order's amount and currency; every order PAID that day
// holding its applied payment; every amount within 0 to ordersaga.MaxAmountCents. A payment is judged on the
// day it was recorded, an order on the day it was paid. MarkPaid writes the PAID status and the applied row in
// one transaction and a refund is recorded with its payment, so nothing in flight shows as a discrepancy.
// Whatever amounts the rows hold, the sums are exact (moneyOnDay) and the check reports rather than fails.
func (s *Store) CheckMoneyDay(ctx context.Context, day time.Time) ([]MoneyTotals, []MoneyFinding, error) {
	day = DayStart(day)
	name := day.Format(DayLayout)
	totals, err := s.moneyOnDay(ctx, day)
	if err != nil {
		return nil, nil, err
	}
	var found []MoneyFinding
	for _, t := range totals {
		if !t.Balanced() {
			// The figures' columns are BIGINT: a sum past an int64 is in the detail alone.
			kept := new(big.Int).Add(centsInt(t.Applied), centsInt(t.Refunded))
			found = append(found, MoneyFinding{Kind: KindMoneyUnbalanced, Subject: name + "/" + t.Currency, Day: name,
				Currency: t.Currency, Expected: centsInt64(t.Captured), Observed: centsInt64(Cents(kept.String())),
				Detail: fmt.Sprintf("captured %s ≠ applied %s + refunded %s: %s cents in %d payments neither applied nor refunded",
					t.Captured, t.Applied, t.Refunded, t.Unsettled, t.UnsettledN)})
		}
	}
	next := day.AddDate(0, 0, 1)
	db := s.db.WithContext(ctx)
	applied, paid := string(ordersaga.PaymentApplied), string(ordersaga.StatusPaid)

	var outOfRange []paymentEntryRow
	if err := db.Raw("SELECT "+paymentEntryColumns+` FROM payments
		WHERE created_at >= ? AND created_at < ? AND (amount_cents < 0 OR amount_cents > ?) ORDER BY id LIMIT ?`,
		day, next, ordersaga.MaxAmountCents, maxMoneyFindings).Scan(&outOfRange).Error; err != nil {
		return nil, nil, fmt.Errorf("money on %s: amounts out of range: %w", name, err)
	}
	for _, r := range outOfRange {
		found = append(found, MoneyFinding{Kind: KindPaymentAmountOutOfRange, Subject: r.EventID, Day: name, OrderID: r.OrderID,
			EventID: r.EventID, Currency: r.Currency, Observed: i64(r.AmountCents),
			Detail: fmt.Sprintf("payment of %d %s recorded as %q: the amount is outside 0 to %d", r.AmountCents, r.Currency,
				r.Result, ordersaga.MaxAmountCents)})
	}

	var unsettled []paymentEntryRow
	if err := db.Raw("SELECT "+paymentEntryColumns+` FROM payments
		WHERE created_at >= ? AND created_at < ? AND refunded_at IS NULL AND result <> ? ORDER BY id LIMIT ?`,
		day, next, applied, maxMoneyFindings).Scan(&unsettled).Error; err != nil {
		return nil, nil, fmt.Errorf("money on %s: unsettled payments: %w", name, err)
	}
	for _, r := range unsettled {
		found = append(found, MoneyFinding{Kind: KindPaymentUnsettled, Subject: r.EventID, Day: name, OrderID: r.OrderID,
			EventID: r.EventID, Currency: r.Currency, Observed: i64(r.AmountCents),
			Detail: fmt.Sprintf("captured %d %s recorded as %q without a refund", r.AmountCents, r.Currency, r.Result)})
	}

	var kept []struct {
		EventID        string
		OrderID        string
		AmountCents    int64
		Currency       string
		Status         *string
		OrderAmount    *int64
		OrderCurrency  *string
		PaymentEventID *string
	}
	if err := db.Raw(`SELECT p.event_id, p.order_id, p.amount_cents, p.currency, o.status, o.amount_cents AS order_amount,
			o.currency AS order_currency, o.payment_event_id
		FROM payments p LEFT JOIN orders o ON o.order_id = p.order_id
		WHERE p.created_at >= ? AND p.created_at < ? AND p.result = ? AND p.refunded_at IS NULL
		  AND (o.order_id IS NULL OR o.status <> ? OR o.payment_event_id IS NULL OR o.payment_event_id <> p.event_id
		       OR o.amount_cents <> p.amount_cents OR o.currency <> p.currency)
		ORDER BY p.id LIMIT ?`, day, next, applied, paid, maxMoneyFindings).Scan(&kept).Error; err != nil {
		return nil, nil, fmt.Errorf("money on %s: applied payments: %w", name, err)
	}
	for _, r := range kept {
		f := MoneyFinding{Kind: KindAppliedNotPaid, Subject: r.EventID, Day: name, OrderID: r.OrderID, EventID: r.EventID,
			Currency: r.Currency, Observed: i64(r.AmountCents)}
		switch {
		case r.Status == nil:
			f.Detail = "applied payment of an order the database does not know"
		case *r.Status != paid:
			f.Detail = fmt.Sprintf("applied payment of an order that is %s, not PAID", *r.Status)
		case r.PaymentEventID == nil || *r.PaymentEventID != r.EventID:
			f.Detail = fmt.Sprintf("applied payment of an order PAID by another event %q (charged twice)", deref(r.PaymentEventID))
		default:
			f.Kind, f.Expected = KindAppliedAmount, r.OrderAmount
			f.Detail = fmt.Sprintf("applied %d %s to an order of %d %s", r.AmountCents, r.Currency, deref(r.OrderAmount), deref(r.OrderCurrency))
		}
		found = append(found, f)
	}

	var orphans []struct {
		OrderID        string
		AmountCents    int64
		Currency       string
		PaymentEventID *string
	}
	if err := db.Raw(`SELECT o.order_id, o.amount_cents, o.currency, o.payment_event_id FROM orders o
		WHERE o.status = ? AND o.paid_at >= ? AND o.paid_at < ?
		  AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.event_id = o.payment_event_id AND p.order_id = o.order_id
		                  AND p.result = ? AND p.refunded_at IS NULL)
		ORDER BY o.id LIMIT ?`, paid, day, next, applied, maxMoneyFindings).Scan(&orphans).Error; err != nil {
		return nil, nil, fmt.Errorf("money on %s: paid orders: %w", name, err)
	}
	for _, o := range orphans {
		found = append(found, MoneyFinding{Kind: KindPaidWithoutPayment, Subject: o.OrderID, Day: name, OrderID: o.OrderID,
			EventID: deref(o.PaymentEventID), Currency: o.Currency, Expected: i64(o.AmountCents),
			Detail: fmt.Sprintf("PAID order of %d %s without its applied payment (event %q)", o.AmountCents, o.Currency, deref(o.PaymentEventID))})
	}
	return totals, found, nil
}

// CheckRefunds reports the refunds that are not where they should be, whatever day they were recorded on: up
// to limit refunds recorded before now − unsentAfter and neither sent nor refused (refund_unsent, the oldest
// first), and up to limit refunds the provider refused that nobody has requeued (refund_refused, the oldest
// first). A refund is judged on its own UTC day (refunded_at's), for its amount. Both scans go through the
// outbox index, which holds only the refunds not sent. unsentAfter ≤ 0 looks for refusals only (the input of
// a run started before the threshold was passed to it); a limit below 1 is an error.
func (s *Store) CheckRefunds(ctx context.Context, now time.Time, unsentAfter time.Duration, limit int) ([]MoneyFinding, error) {
	if limit < 1 {
		return nil, fmt.Errorf("check refunds: limit %d: want at least 1", limit)
	}
	now = now.UTC()
	var found []MoneyFinding
	if unsentAfter > 0 {
		unsent, err := s.refundRows(ctx, "unsent", limit, refundToSend+" AND refunded_at < ?", now.Add(-unsentAfter))
		if err != nil {
			return nil, err
		}
		for _, r := range unsent {
			waited := now.Sub(*r.RefundedAt).Truncate(time.Second)
			found = append(found, refundFinding(KindRefundUnsent, r, fmt.Sprintf(
				"refund of %d %s recorded at %s, waiting %s (more than %s) neither sent to the provider nor refused by it",
				r.AmountCents, r.Currency, r.RefundedAt.Format(time.RFC3339), waited, unsentAfter)))
		}
	}
	refused, err := s.refundRows(ctx, "refused", limit, refundRefused)
	if err != nil {
		return nil, err
	}
	for _, r := range refused {
		found = append(found, refundFinding(KindRefundRefused, r, fmt.Sprintf(
			"refund of %d %s refused by the provider at %s: %s", r.AmountCents, r.Currency,
			deref(r.RefundRefusedAt).Format(time.RFC3339), deref(r.RefundRefusedReason))))
	}
	return found, nil
}

// refundRows reads up to limit refunds matching where (with its args), the oldest recorded first (the outbox
// index's order).
func (s *Store) refundRows(ctx context.Context, what string, limit int, where string, args ...any) ([]paymentEntryRow, error) {
	var rows []paymentEntryRow
	if err := s.db.WithContext(ctx).Raw("SELECT "+paymentEntryColumns+" FROM payments WHERE "+where+
		" ORDER BY refunded_at, id LIMIT ?", append(args, limit)...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("check refunds: %s: %w", what, err)
	}
	return rows, nil
}

// refundFinding is a finding of kind about the refund r: its event, on its UTC day, for its amount.
func refundFinding(kind string, r paymentEntryRow, detail string) MoneyFinding {
	return MoneyFinding{Kind: kind, Subject: r.EventID, Day: r.RefundedAt.UTC().Format(DayLayout), OrderID: r.OrderID,
		EventID: r.EventID, Currency: r.Currency, Expected: i64(r.AmountCents), Observed: i64(r.AmountCents), Detail: detail}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// RecordMoneyFindings writes the findings not recorded yet to money_anomalies and returns those it wrote.
// A finding already there (from an earlier run, or a concurrent one) is left as first recorded: the UNIQUE
// (kind, subject) key makes each discrepancy one row, however many runs see it.
func (s *Store) RecordMoneyFindings(ctx context.Context, runID string, found []MoneyFinding) ([]MoneyFinding, error) {
	var recorded []MoneyFinding
	now := s.now()
	for _, f := range found {
		err := s.db.WithContext(ctx).Exec(`INSERT INTO money_anomalies (kind, subject, day, run_id, order_id, event_id, currency,
				expected_cents, observed_cents, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			f.Kind, clip(f.Subject, moneySubjectChars), f.Day, runID, nullable(f.OrderID), nullable(f.EventID), nullable(f.Currency),
			f.Expected, f.Observed, nullable(clip(f.Detail, moneyAnomalyDetailChars)), now).Error
		switch {
		case err == nil:
			recorded = append(recorded, f)
		case !isDuplicate(err):
			return recorded, fmt.Errorf("record money finding %s %s: %w", f.Kind, f.Subject, err)
		}
	}
	return recorded, nil
}

// MoneyAnomalies returns the rows of money_anomalies, oldest first; day "" means every day.
func (s *Store) MoneyAnomalies(ctx context.Context, day string) ([]MoneyAnomalyRow, error) {
	var rows []struct {
		ID                           int64
		Kind, Subject, Day, RunID    string
		OrderID, EventID, Currency   *string
		ExpectedCents, ObservedCents *int64
		Detail                       *string
		CreatedAt                    time.Time
	}
	q := s.db.WithContext(ctx).Table("money_anomalies").Order("id")
	if day != "" {
		q = q.Where("day = ?", day)
	}
	if err := q.Select(`id, kind, subject, day, run_id, order_id, event_id, currency, expected_cents, observed_cents,
		detail, created_at`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("money anomalies: %w", err)
	}
	out := make([]MoneyAnomalyRow, len(rows))
	for i, r := range rows {
		out[i] = MoneyAnomalyRow{ID: r.ID, RunID: r.RunID, CreatedAt: r.CreatedAt.UTC(), MoneyFinding: MoneyFinding{
			Kind: r.Kind, Subject: r.Subject, Day: r.Day, OrderID: deref(r.OrderID), EventID: deref(r.EventID),
			Currency: deref(r.Currency), Expected: r.ExpectedCents, Observed: r.ObservedCents, Detail: deref(r.Detail)}}
	}
	return out, nil
}
