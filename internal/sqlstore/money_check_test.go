package sqlstore_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

var checkDay = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)

// The money check reports, and never fails, on whatever the payments table holds: rows from before the
// amount's bound (two near 2^63, one negative) are each a finding and the day's totals are exact (SQLite's
// SUM failed with "integer overflow", MySQL's DECIMAL sum could not be read into an int64, and the day's
// check failed on every run, so nothing else wrong that day was reported).
func TestCheckMoneyDay_ReportsAmountsOutOfRangeWithoutError(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	at := checkDay.Add(10 * time.Hour)
	for _, p := range []struct {
		event    string
		cents    int64
		result   ordersaga.PaymentResult
		refunded bool
	}{
		{"evt-huge-1", math.MaxInt64, ordersaga.PaymentApplied, false},
		{"evt-huge-2", math.MaxInt64 - 1, ordersaga.PaymentRefunded, true},
		{"evt-negative", -5, ordersaga.PaymentRejectedAmount, true},
		{"evt-fine", 100, ordersaga.PaymentApplied, false},
	} {
		var refundedAt *time.Time
		if p.refunded {
			refundedAt = &at
		}
		if err := store.DB().Exec(`INSERT INTO payments (event_id, order_id, amount_cents, currency, result, refunded_at, created_at)
			VALUES (?, ?, ?, 'EUR', ?, ?, ?)`, p.event, "o-"+p.event, p.cents, string(p.result), refundedAt, at).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := store.DB().Exec(`INSERT INTO orders (order_id, user_id, status, amount_cents, currency, paid_at, payment_event_id,
		created_at, updated_at) VALUES ('o-evt-fine', 'u', 'PAID', 100, 'EUR', ?, 'evt-fine', ?, ?)`, at, at, at).Error; err != nil {
		t.Fatal(err)
	}

	totals, found, err := store.CheckMoneyDay(ctx, checkDay)
	if err != nil {
		t.Fatalf("CheckMoneyDay: %v", err)
	}
	// captured 2^63−1 + 2^63−2 − 5 + 100; applied 2^63−1 + 100; refunded 2^63−2 − 5.
	if len(totals) != 1 || fmt.Sprint(totals[0].Captured) != "18446744073709551708" || fmt.Sprint(totals[0].Applied) != "9223372036854775907" ||
		fmt.Sprint(totals[0].Refunded) != "9223372036854775801" || fmt.Sprint(totals[0].Unsettled) != "0" || totals[0].CapturedN != 4 {
		t.Errorf("totals %+v, want exact sums", totals)
	}
	out := map[string]bool{}
	for _, f := range found {
		if f.Kind == sqlstore.KindPaymentAmountOutOfRange {
			out[f.Subject] = true
		}
	}
	if len(out) != 3 || !out["evt-huge-1"] || !out["evt-huge-2"] || !out["evt-negative"] {
		t.Errorf("findings %+v: want each of the 3 rows out of range reported", found)
	}

	// The money step of a reconciliation run records them, and does not fail.
	sum, err := reconcile.Money(ctx, store, nil, "run-out-of-range", 1, time.Hour, at, nil)
	if err != nil {
		t.Fatalf("reconcile.Money: %v", err)
	}
	if sum.ByKind[sqlstore.KindPaymentAmountOutOfRange] != 3 || sum.Recorded != sum.Findings {
		t.Errorf("money step %+v: want the 3 rows out of range found and recorded", sum)
	}
}

// A day whose payments are each within the bound can still sum past an int64 (more than 461 at
// ordersaga.MaxAmountCents): its totals are exact and the check does not fail.
func TestCheckMoneyDay_SumsPastAnInt64Exactly(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	store.SetClock(func() time.Time { return checkDay.Add(time.Hour) })
	const n = 462
	for i := range n {
		if _, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{EventID: fmt.Sprintf("evt-max-%d", i), OrderID: "o-max",
			AmountCents: ordersaga.MaxAmountCents, Currency: "EUR", Result: ordersaga.PaymentRefunded}); err != nil {
			t.Fatal(err)
		}
	}
	totals, found, err := store.CheckMoneyDay(ctx, checkDay)
	if err != nil {
		t.Fatalf("CheckMoneyDay: %v", err)
	}
	const want = "9240000000000000000" // 462 × 2 × 10^16
	if len(totals) != 1 || fmt.Sprint(totals[0].Captured) != want || fmt.Sprint(totals[0].Refunded) != want ||
		fmt.Sprint(totals[0].Applied) != "0" || fmt.Sprint(totals[0].Unsettled) != "0" || !totals[0].Balanced() {
		t.Errorf("totals %+v, want captured = refunded = %s", totals, want)
	}
	if len(found) != 0 {
		t.Errorf("findings %+v on a balanced day", found)
	}
}
