package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

// The money ledger (docs/payments.md): the payments table read as an accountant reads it. Every payment event
// the provider captured is one row; the rule is that a row is a refund iff refunded_at is set (results
// refunded and rejected_amount, recorded with the refund in the same insert), and an applied row without
// refunded_at is money kept for a PAID order. A refund is also an outbox entry for the provider's adapter:
// refund_sent_at is NULL until the adapter has handed it to the provider, and refund_refused_at is set when
// the provider refused it for good (migration 0008): such a refund is not to send until a person requeues it.

// checkPaymentAmount refuses a payment whose amount is outside 0 to ordersaga.MaxAmountCents: the payments
// store holds no amount the webhook, the payment signal or the pay update would refuse (ordersaga.CheckPayment).
func checkPaymentAmount(p ordersaga.PaymentRecord) error {
	if p.AmountCents < 0 || p.AmountCents > ordersaga.MaxAmountCents {
		return fmt.Errorf("payment %s: amount_cents %d: want 0 to %d: %w", p.EventID, p.AmountCents, ordersaga.MaxAmountCents,
			ordersaga.ErrAmountOverflow)
	}
	return nil
}

// DayLayout is how a money day is written: a UTC calendar day.
const DayLayout = "2006-01-02"

// maxMoneyDays bounds a range of days read at once.
const maxMoneyDays = 366

// ErrNotARefund means the payment event exists but is not a refund (it was applied).
var ErrNotARefund = errors.New("payment is not a refund")

// ErrRefundRefEmpty means MarkRefundSent was given no provider reference (refund_ref): a refund is marked
// sent only with the provider's name for it.
var ErrRefundRefEmpty = errors.New("the provider's reference (refund_ref) is empty: a refund is marked sent only with one")

// PaymentEntry is one payments row with its refund state.
type PaymentEntry struct {
	ID int64 // insert order: the ledger's and the outbox's order
	ordersaga.PaymentRecord
	// RefundSentAt is when the provider's adapter marked the refund sent (nil: not yet, or not a refund).
	RefundSentAt *time.Time
	// RefundRef is what the provider called the refund, as the adapter reported it ("" when unknown).
	RefundRef string
	// RefundRefusedAt is when the provider's refusal of the refund for good was recorded (nil: never refused,
	// or requeued since). A refund both refused and sent was executed: the provider's reference won, the
	// refusal is history.
	RefundRefusedAt *time.Time
	// RefundRefusal is the refusal's reason as the adapter reported it ("" when not refused).
	RefundRefusal string
}

// Refund reports whether the payment is refunded (captured and given back).
func (e PaymentEntry) Refund() bool { return e.RefundedAt != nil }

// Kept reports whether the payment is money kept for its order (applied and not refunded).
func (e PaymentEntry) Kept() bool { return e.Result == ordersaga.PaymentApplied && e.RefundedAt == nil }

// Cents is an exact sum of amounts in minor units: a decimal integer, written as a JSON number. A day's total
// can pass an int64 (more than 461 payments at ordersaga.MaxAmountCents, or rows from before the bound), and
// the money check reports it exactly all the same.
type Cents = json.Number

// MoneyTotals is one day's money in one currency, in minor units. Every payment is counted on the UTC day it
// was recorded (created_at); a refund is recorded with its payment, so it falls on the same day.
type MoneyTotals struct {
	Day      string `json:"day"`
	Currency string `json:"currency"`
	// Captured is every payment event the provider captured; Applied the part kept for PAID orders;
	// Refunded the part given back (refunded and rejected_amount); Unsettled the rest, which must be 0.
	Captured  Cents `json:"captured_cents"`
	Applied   Cents `json:"applied_cents"`
	Refunded  Cents `json:"refunded_cents"`
	Unsettled Cents `json:"unsettled_cents"`
	// The same as counts of payment events.
	CapturedN  int64 `json:"captured"`
	AppliedN   int64 `json:"applied"`
	RefundedN  int64 `json:"refunded"`
	UnsettledN int64 `json:"unsettled"`
	// RefundsUnsent counts the day's refunds still to send: not marked sent by the provider's adapter, nor
	// refused by the provider.
	RefundsUnsent int64 `json:"refunds_unsent"`
}

// Balanced reports whether captured = applied + refunded, to the cent.
func (t MoneyTotals) Balanced() bool {
	c, a, r := centsInt(t.Captured), centsInt(t.Applied), centsInt(t.Refunded)
	return c != nil && a != nil && r != nil && c.Cmp(new(big.Int).Add(a, r)) == 0
}

// centsInt reads an amount ("" is 0); nil when it is not a decimal integer.
func centsInt(c Cents) *big.Int {
	if c == "" {
		return new(big.Int)
	}
	n, ok := new(big.Int).SetString(string(c), 10)
	if !ok {
		return nil
	}
	return n
}

// centsInt64 is an amount as an int64, or nil when it does not fit one.
func centsInt64(c Cents) *int64 {
	n := centsInt(c)
	if n == nil || !n.IsInt64() {
		return nil
	}
	return i64(n.Int64())
}

// DayStart is the UTC midnight that starts t's day.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ParseDay reads a day written as DayLayout.
func ParseDay(s string) (time.Time, error) {
	t, err := time.Parse(DayLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("day %q: want YYYY-MM-DD: %w", s, err)
	}
	return t, nil
}

// moneyDays lists the UTC days from from's to to's, both included.
func moneyDays(from, to time.Time) ([]time.Time, error) {
	first, last := DayStart(from), DayStart(to)
	if last.Before(first) {
		return nil, fmt.Errorf("days %s to %s: the range ends before it starts", first.Format(DayLayout), last.Format(DayLayout))
	}
	var out []time.Time
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		if len(out) == maxMoneyDays {
			return nil, fmt.Errorf("days %s to %s: more than %d days", first.Format(DayLayout), last.Format(DayLayout), maxMoneyDays)
		}
		out = append(out, d)
	}
	return out, nil
}

const paymentEntryColumns = `id, event_id, order_id, amount_cents, currency, result, detail, refunded_at, created_at,
	refund_sent_at, refund_ref, refund_refused_at, refund_refused_reason`

type paymentEntryRow struct {
	ID           int64
	EventID      string
	OrderID      string
	AmountCents  int64
	Currency     string
	Result       string
	Detail       *string
	RefundedAt   *time.Time
	CreatedAt    time.Time
	RefundSentAt *time.Time
	RefundRef    *string
	// The refusal's columns (0008).
	RefundRefusedAt     *time.Time
	RefundRefusedReason *string
}

func (r paymentEntryRow) entry() PaymentEntry {
	e := PaymentEntry{ID: r.ID, PaymentRecord: ordersaga.PaymentRecord{EventID: r.EventID, OrderID: r.OrderID,
		AmountCents: r.AmountCents, Currency: r.Currency, Result: ordersaga.PaymentResult(r.Result),
		RefundedAt: utcPtr(r.RefundedAt), CreatedAt: r.CreatedAt.UTC(), Detail: deref(r.Detail)},
		RefundSentAt: utcPtr(r.RefundSentAt), RefundRef: deref(r.RefundRef),
		RefundRefusedAt: utcPtr(r.RefundRefusedAt), RefundRefusal: deref(r.RefundRefusedReason)}
	return e
}

func (s *Store) paymentEntries(ctx context.Context, what, where string, args ...any) ([]PaymentEntry, error) {
	var rows []paymentEntryRow
	if err := s.db.WithContext(ctx).Raw("SELECT "+paymentEntryColumns+" FROM payments WHERE "+where, args...).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]PaymentEntry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}

// PaymentsOfOrder returns every payment event of an order, in the order they were recorded.
func (s *Store) PaymentsOfOrder(ctx context.Context, orderID string) ([]PaymentEntry, error) {
	return s.paymentEntries(ctx, "payments of order "+orderID, "order_id = ? ORDER BY id", orderID)
}

// PaymentsOnDays returns up to limit payment events recorded on the UTC days from from's to to's (both
// included), in the order they were recorded, after the row afterID (0: from the start). A page shorter
// than limit is the last.
func (s *Store) PaymentsOnDays(ctx context.Context, from, to time.Time, afterID int64, limit int) ([]PaymentEntry, error) {
	days, err := moneyDays(from, to)
	if err != nil {
		return nil, fmt.Errorf("payments on days: %w", err)
	}
	start, end := days[0], days[len(days)-1].AddDate(0, 0, 1)
	return s.paymentEntries(ctx, "payments on days", "created_at >= ? AND created_at < ? AND id > ? ORDER BY id LIMIT ?",
		start, end, afterID, limit)
}

// MoneyOnDays sums the payments of each UTC day from from's to to's (both included), per currency: one
// MoneyTotals per day and currency that had a payment, by day then currency.
func (s *Store) MoneyOnDays(ctx context.Context, from, to time.Time) ([]MoneyTotals, error) {
	days, err := moneyDays(from, to)
	if err != nil {
		return nil, fmt.Errorf("money on days: %w", err)
	}
	var out []MoneyTotals
	for _, d := range days {
		t, err := s.moneyOnDay(ctx, d)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
	}
	return out, nil
}

// amountPart is 2^32: the day's sums are of amount_cents split at it, amount = hi × 2^32 + lo (hi truncated
// toward 0 and lo of amount's sign, alike on both databases), because a plain SUM can pass an int64, which
// SQLite fails with "integer overflow" and MySQL returns as a DECIMAL that Go cannot read into an int64. The
// parts' sums fit an int64 for any day of fewer than 2^31 payments, whatever the amounts.
const amountPart = 1 << 32

// amountParts are the SQL expressions of amount_cents' parts, hi and lo.
func (s *Store) amountParts() (hi, lo string) {
	div := "/" // SQLite: integer division of integers
	if s.dialect == schema.MySQL {
		div = "DIV" // "/" is decimal division there
	}
	part := strconv.Itoa(amountPart)
	return "amount_cents " + div + " " + part, "amount_cents % " + part
}

// moneyDayRow is one currency of a day as the query sums it: every amount in parts (amountParts).
type moneyDayRow struct {
	Currency                          string
	CapturedN, AppliedN, RefundedN    int64
	CapturedHi, AppliedHi, RefundedHi int64
	CapturedLo, AppliedLo, RefundedLo int64
	RefundsUnsent                     int64
}

func joinParts(hi, lo int64) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(hi), 32)
	return n.Add(n, big.NewInt(lo))
}

func (s *Store) moneyOnDay(ctx context.Context, day time.Time) ([]MoneyTotals, error) {
	var rows []moneyDayRow
	applied := string(ordersaga.PaymentApplied)
	hi, lo := s.amountParts()
	if err := s.db.WithContext(ctx).Raw(`SELECT currency,
			COUNT(*) AS captured_n,
			COALESCE(SUM(`+hi+`), 0) AS captured_hi,
			COALESCE(SUM(`+lo+`), 0) AS captured_lo,
			COALESCE(SUM(CASE WHEN refunded_at IS NULL AND result = ? THEN 1 ELSE 0 END), 0) AS applied_n,
			COALESCE(SUM(CASE WHEN refunded_at IS NULL AND result = ? THEN `+hi+` ELSE 0 END), 0) AS applied_hi,
			COALESCE(SUM(CASE WHEN refunded_at IS NULL AND result = ? THEN `+lo+` ELSE 0 END), 0) AS applied_lo,
			COALESCE(SUM(CASE WHEN refunded_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS refunded_n,
			COALESCE(SUM(CASE WHEN refunded_at IS NOT NULL THEN `+hi+` ELSE 0 END), 0) AS refunded_hi,
			COALESCE(SUM(CASE WHEN refunded_at IS NOT NULL THEN `+lo+` ELSE 0 END), 0) AS refunded_lo,
			COALESCE(SUM(CASE WHEN `+refundToSend+` THEN 1 ELSE 0 END), 0) AS refunds_unsent
		FROM payments WHERE created_at >= ? AND created_at < ? GROUP BY currency ORDER BY currency`,
		applied, applied, applied, day, day.AddDate(0, 0, 1)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("money on %s: %w", day.Format(DayLayout), err)
	}
	out := make([]MoneyTotals, len(rows))
	for i, r := range rows {
		captured, appliedSum, refunded := joinParts(r.CapturedHi, r.CapturedLo), joinParts(r.AppliedHi, r.AppliedLo),
			joinParts(r.RefundedHi, r.RefundedLo)
		unsettled := new(big.Int).Sub(captured, appliedSum)
		unsettled.Sub(unsettled, refunded)
		out[i] = MoneyTotals{Day: day.Format(DayLayout), Currency: r.Currency,
			Captured: Cents(captured.String()), Applied: Cents(appliedSum.String()), Refunded: Cents(refunded.String()),
			Unsettled: Cents(unsettled.String()),
			CapturedN: r.CapturedN, AppliedN: r.AppliedN, RefundedN: r.RefundedN,
			UnsettledN: r.CapturedN - r.AppliedN - r.RefundedN, RefundsUnsent: r.RefundsUnsent}
	}
	return out, nil
}

// The refund outbox's conditions, one home each. A refund to send is recorded, not sent and not refused; a
// refused one waits for a person (RequeueRefund) and is never sent on its own. Both start with
// refund_sent_at IS NULL, so the outbox index (refund_sent_at, refunded_at) bounds their scans to the rows
// not sent.
const (
	refundToSend  = "refund_sent_at IS NULL AND refunded_at IS NOT NULL AND refund_refused_at IS NULL"
	refundRefused = "refund_sent_at IS NULL AND refunded_at IS NOT NULL AND refund_refused_at IS NOT NULL"
)

// refundRefusalChars is the width of payments.refund_refused_reason (0008), in characters.
const refundRefusalChars = 255

// refusedWithoutReason is the reason recorded for a refusal reported without one.
const refusedWithoutReason = "refused"

// PendingRefunds is the refund outbox: up to limit refunds the provider's adapter has not marked sent and the
// provider has not refused, oldest first (in the order they were recorded), after the row afterID (0: from
// the start). An adapter sends each with its event ID as the provider's idempotency key and then calls
// MarkRefundSent, or MarkRefundRefused when the provider refused it for good; see docs/payments.md.
func (s *Store) PendingRefunds(ctx context.Context, afterID int64, limit int) ([]PaymentEntry, error) {
	return s.paymentEntries(ctx, "pending refunds", refundToSend+" AND id > ? ORDER BY id LIMIT ?", afterID, limit)
}

// CountPendingRefunds counts the refunds still to send (PendingRefunds' rows): not marked sent, not refused.
func (s *Store) CountPendingRefunds(ctx context.Context) (int64, error) {
	return s.countPayments(ctx, "count pending refunds", refundToSend)
}

// CountRefusedRefunds counts the refunds the provider refused for good that nobody has requeued and the
// provider has not reported sent since: each waits for a person.
func (s *Store) CountRefusedRefunds(ctx context.Context) (int64, error) {
	return s.countPayments(ctx, "count refused refunds", refundRefused)
}

func (s *Store) countPayments(ctx context.Context, what, where string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM payments WHERE " + where).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}

// MarkRefundSent records that the provider accepted the refund of a payment event, with ref, the provider's
// name for it (required: the store is the last line, and a refund is marked sent only with a reference;
// ErrRefundRefEmpty for an empty or blank one, the row unchanged). It is idempotent: the first mark stands and
// a later one returns it unchanged. The provider's answer wins over a refusal recorded before it: a refused
// refund marked sent is sent, and keeps its refusal's columns as history. ordersaga.ErrNotFound for an
// unknown event, ErrNotARefund for a payment that is not refunded (whatever ref is).
func (s *Store) MarkRefundSent(ctx context.Context, eventID, ref string) (PaymentEntry, error) {
	const what = "mark refund sent"
	if strings.TrimSpace(ref) == "" {
		e, err := s.readRefund(ctx, what, eventID)
		if err != nil {
			return e, err
		}
		return e, fmt.Errorf("%s %s: %w", what, eventID, ErrRefundRefEmpty)
	}
	return s.updateRefund(ctx, what, eventID, `UPDATE payments SET refund_sent_at = ?, refund_ref = ?
		WHERE event_id = ? AND refunded_at IS NOT NULL AND refund_sent_at IS NULL`,
		s.now(), clip(ref, refundRefChars), eventID)
}

// MarkRefundRefused records that the provider refused the refund of a payment event for good (reason: the
// provider's code and explanation, cut to 255 characters; "" is recorded as "refused"): the refund leaves
// the outbox and the unsent count, and the money check reports it (refund_refused) until a person requeues
// it (RequeueRefund). The first refusal stands: a later one returns it unchanged. A refund already marked
// sent stays sent and is returned unchanged, without error (the provider executed it).
// ordersaga.ErrNotFound for an unknown event, ErrNotARefund for a payment that is not refunded.
func (s *Store) MarkRefundRefused(ctx context.Context, eventID, reason string) (PaymentEntry, error) {
	if reason == "" {
		reason = refusedWithoutReason
	}
	return s.updateRefund(ctx, "mark refund refused", eventID, `UPDATE payments SET refund_refused_at = ?, refund_refused_reason = ?
		WHERE event_id = ? AND refunded_at IS NOT NULL AND refund_sent_at IS NULL AND refund_refused_at IS NULL`,
		s.now(), clip(reason, refundRefusalChars), eventID)
}

// RequeueRefund clears the refusal of a refund not sent (a person decided to send it again): the refund is
// back in the outbox, to be sent with its event ID as the idempotency key as before. A refund not refused,
// or already sent, is returned unchanged. ordersaga.ErrNotFound for an unknown event, ErrNotARefund for a
// payment that is not refunded.
func (s *Store) RequeueRefund(ctx context.Context, eventID string) (PaymentEntry, error) {
	return s.updateRefund(ctx, "requeue refund", eventID, `UPDATE payments SET refund_refused_at = NULL, refund_refused_reason = NULL
		WHERE event_id = ? AND refunded_at IS NOT NULL AND refund_sent_at IS NULL AND refund_refused_at IS NOT NULL`, eventID)
}

// updateRefund runs one conditional update of an event's refund columns and reads the row back: the row as
// it now is, ordersaga.ErrNotFound when there is none, ErrNotARefund (with the row) when it is not a refund.
func (s *Store) updateRefund(ctx context.Context, what, eventID, update string, args ...any) (PaymentEntry, error) {
	if err := s.db.WithContext(ctx).Exec(update, args...).Error; err != nil {
		return PaymentEntry{}, fmt.Errorf("%s %s: %w", what, eventID, err)
	}
	return s.readRefund(ctx, what, eventID)
}

// readRefund reads an event's row: ordersaga.ErrNotFound when there is none, ErrNotARefund (with the row)
// when it is not a refund.
func (s *Store) readRefund(ctx context.Context, what, eventID string) (PaymentEntry, error) {
	got, err := s.paymentEntries(ctx, what+" "+eventID, "event_id = ?", eventID)
	switch {
	case err != nil:
		return PaymentEntry{}, err
	case len(got) == 0:
		return PaymentEntry{}, fmt.Errorf("%s %s: %w", what, eventID, ordersaga.ErrNotFound)
	case !got[0].Refund():
		return got[0], fmt.Errorf("%s %s (result %s): %w", what, eventID, got[0].Result, ErrNotARefund)
	}
	return got[0], nil
}
