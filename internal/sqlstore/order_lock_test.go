package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// The audit's oversell: an order ID that was PAID lives a second time (Temporal forgot its first run). Its
// deduct must be refused, not answered AlreadyDone, and its compensation must restore nothing: the units of
// a paid order stay sold.
func TestSecondLifeOfAPaidOrder_NeverRestoresItsUnits(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 3))); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 300, Currency: "EUR"}, payBy); err != nil {
		t.Fatal(err)
	}

	// The second life: its deduct is refused (the order is closed), not a duplicate of the first.
	res, err := store.Deduct(ctx, deductIn("o1", line("A", 3)))
	if !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("Deduct of a PAID order = %+v, %v; want ErrCompensated", res, err)
	}
	// Its compensation restores nothing and says the units stay sold.
	out, err := store.Restore(ctx, "o1", []ordersaga.Line{line("A", 3)})
	if err != nil {
		t.Fatalf("Restore of a PAID order: %v", err)
	}
	if want := []ordersaga.RestoreLine{{SKU: "A", Sold: true}}; !slices.Equal(out, want) {
		t.Errorf("Restore of a PAID order = %+v, want %+v", out, want)
	}
	// And its record leaves the order PAID, saying so.
	rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: ordersaga.StatusExpired, ClosedReason: "payment deadline passed"})
	if err != nil {
		t.Fatalf("CloseOrder of a PAID order: %v", err)
	}
	if rec.Status != ordersaga.StatusPaid {
		t.Errorf("CloseOrder turned PAID into %s", rec.Status)
	}
	checkStock(t, store, map[string]int64{"A": 7})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpDeduct, 3})
	checkI4(t, store)
}

// A payment that commits after the order's restore is refused (the payment is then refunded): a PAID order
// never has its units back on sale.
func TestMarkPaid_RefusedOnceTheOrderIsRestored(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 2))); err != nil {
		t.Fatal(err)
	}
	// The compensation's restore ran; the order is still AWAITING_PAYMENT until its record is written.
	if _, err := store.Restore(ctx, "o1", []ordersaga.Line{line("A", 2)}); err != nil {
		t.Fatal(err)
	}
	err := store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 200, Currency: "EUR"}, payBy)
	if !errors.Is(err, ordersaga.ErrOrderNotPayable) {
		t.Fatalf("MarkPaid after the restore = %v, want ErrOrderNotPayable", err)
	}
	if rec, _ := store.Order(ctx, "o1"); rec.Status == ordersaga.StatusPaid {
		t.Errorf("order is PAID with its units restored")
	}
	if n := countRows(t, store, "payments", "o1"); n != 0 {
		t.Errorf("payments of o1 = %d, want 0 (the refused payment is the caller's to refund)", n)
	}
	checkStock(t, store, map[string]int64{"A": 10})
}

// A deduct of an order that is closed or restored is refused, whatever closed it.
func TestDeduct_RefusedOnceTheOrderIsClosedOrRestored(t *testing.T) {
	t.Parallel()
	closers := map[string]func(t *testing.T, store *sqlstore.Store){
		"restored": func(t *testing.T, store *sqlstore.Store) {
			if _, err := store.Restore(t.Context(), "o1", []ordersaga.Line{line("A", 2)}); err != nil {
				t.Fatal(err)
			}
		},
		"expired": func(t *testing.T, store *sqlstore.Store) {
			if _, err := store.CloseOrder(t.Context(), ordersaga.OrderRecord{OrderID: "o1", Status: ordersaga.StatusExpired}); err != nil {
				t.Fatal(err)
			}
		},
		"paid": func(t *testing.T, store *sqlstore.Store) {
			if err := store.MarkPaid(t.Context(), ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 200, Currency: "EUR"}, payBy); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, closeIt := range closers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
			if _, err := store.Deduct(t.Context(), deductIn("o1", line("A", 2))); err != nil {
				t.Fatal(err)
			}
			closeIt(t, store)
			before := stockOf(t, store, "A")
			res, err := store.Deduct(t.Context(), deductIn("o1", line("A", 2)))
			if !errors.Is(err, ordersaga.ErrCompensated) {
				t.Fatalf("Deduct of a %s order = %+v, %v; want ErrCompensated", name, res, err)
			}
			if after := stockOf(t, store, "A"); after != before {
				t.Errorf("refused deduct moved the stock from %d to %d", before, after)
			}
		})
	}
}

// A reason of any length is stored cut to its column on a rune boundary: a long one (a SKU of 64
// characters in an error chain) must never make the record fail for ever on a strict-mode MySQL.
func TestCloseOrder_StoresALongReasonBounded(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	sku := strings.Repeat("S", 64)
	reason := "reservation failed: reserve " + sku + ": " + strings.Repeat("é", 300)
	rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{
		OrderID: "o1", UserID: "u1", Status: ordersaga.StatusRejected, Currency: "EUR",
		ClosedReason: reason, Lines: []ordersaga.Line{line("A", 1)},
	})
	if err != nil {
		t.Fatalf("CloseOrder with a %d-byte reason: %v", len(reason), err)
	}
	if n := utf8.RuneCountInString(rec.ClosedReason); n > 255 || !utf8.ValidString(rec.ClosedReason) ||
		!strings.HasPrefix(reason, rec.ClosedReason) || n < 200 {
		t.Errorf("stored reason (%d runes, valid %v) = %q; want a valid prefix of at most 255 runes",
			n, utf8.ValidString(rec.ClosedReason), rec.ClosedReason)
	}
	p, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 1,
		Currency: "EUR", Result: ordersaga.PaymentRefunded, Detail: reason})
	if err != nil {
		t.Fatalf("RecordPayment with a %d-byte detail: %v", len(reason), err)
	}
	if n := utf8.RuneCountInString(p.Detail); n > 255 || !strings.HasPrefix(reason, p.Detail) {
		t.Errorf("stored payment detail has %d runes, want a prefix of at most 255", n)
	}
}

// probeFunc is an OrderProbe from a function.
type probeFunc func(ctx context.Context, orderID string) (bool, string, error)

func (f probeFunc) OrderWorkflowGone(ctx context.Context, orderID string) (bool, string, error) {
	return f(ctx, orderID)
}

// An operator terminates a workflow while its MarkPaid is still running: reconciliation sees the workflow
// gone and the order open, then MarkPaid commits (here, from the probe's answer), then the repair runs. The
// order is PAID: its units must stay sold, on both sides, and no RESTORE row may exist.
func TestReconcilerLeaks_APaymentCommittingMeanwhileWins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	rs := testenv.MustOpenRedis(t)
	if err := rs.SetAvailable(ctx, "A", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Reserve(ctx, "o1", "", "A", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 3))); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Confirm(ctx, "o1", "A"); err != nil {
		t.Fatal(err)
	}
	var paidErr error
	probed := false
	r := &reconcile.Reconciler{Store: store, Redis: rs, RunID: "run-1",
		Probe: probeFunc(func(ctx context.Context, orderID string) (bool, string, error) {
			probed = true
			paidErr = store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: orderID, AmountCents: 300, Currency: "EUR"}, payBy)
			return true, "TERMINATED", nil
		})}
	sum, found, _, _, err := r.Leaks(ctx, payBy.Add(time.Hour), "", 10, nil) // past the order's deadline
	if err != nil || paidErr != nil || !probed {
		t.Fatalf("Leaks: %v; probed %v; MarkPaid from the probe: %v", err, probed, paidErr)
	}
	if sum.LeakedOrders != 0 || len(found) != 0 {
		t.Errorf("a paid order was repaired as leaked: %s, %+v", sum, found)
	}
	rec, err := store.Order(ctx, "o1")
	if err != nil || rec.Status != ordersaga.StatusPaid {
		t.Fatalf("order after the repair: %s, %v; want PAID", rec.Status, err)
	}
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpDeduct, 3})
	checkStock(t, store, map[string]int64{"A": 7})
	if avail, _, err := rs.Available(ctx, "A"); err != nil || avail != 7 {
		t.Errorf("redis avail %d, %v; want 7 (3 paid)", avail, err)
	}
}

// An open order closed by its record while its deduct still stands (its first life died awaiting payment; a
// later life of its ID failed its reserve, so it had nothing to restore, and records the order closed): the
// close gives the deduct back in the same transaction. Found by the spin model (models/).
func TestCloseOrder_GivesBackADeductThatStillStands(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 3))); err != nil {
		t.Fatal(err)
	}
	rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: ordersaga.StatusRejected,
		ClosedReason: "reservation failed: Compensated", Lines: []ordersaga.Line{line("A", 3)}})
	if err != nil || rec.Status != ordersaga.StatusRejected {
		t.Fatalf("CloseOrder = %s, %v; want REJECTED", rec.Status, err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpDeduct, 3}, ledgerRow{"o1", "A", sqlstore.OpRestore, 3})
	// After a compensation the close's restore is a duplicate: nothing moves twice.
	if _, err := store.Deduct(ctx, deductIn("o2", line("A", 2))); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Restore(ctx, "o2", []ordersaga.Line{line("A", 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o2", Status: ordersaga.StatusExpired}); err != nil {
		t.Fatal(err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkI4(t, store)
}

// A Temporal that does not know an open order's workflow (restored apart from the database, or pointed at
// another namespace) must not cancel it while it may still be paid: reconciliation leaves every open order
// alone until its payment deadline plus the grace period has passed, and only then closes it (EXPIRED) and
// gives its units back, once.
func TestReconcilerLeaks_NotFoundBeforeTheDeadlineIsLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	rs := testenv.MustOpenRedis(t)
	if err := rs.SetAvailable(ctx, "A", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 3))); err != nil { // pay_by = payBy
		t.Fatal(err)
	}
	probes := 0
	r := &reconcile.Reconciler{Store: store, Redis: rs, RunID: "run-nf", Grace: 2 * time.Minute,
		Probe: probeFunc(func(context.Context, string) (bool, string, error) { probes++; return true, "NOT_FOUND", nil })}
	for _, now := range []time.Time{time.Now(), payBy.Add(-time.Second), payBy.Add(time.Minute)} {
		sum, found, _, _, err := r.Leaks(ctx, now, "", 10, nil)
		if err != nil || sum.LeakedOrders != 0 || len(found) != 0 {
			t.Fatalf("Leaks at %s (deadline %s, grace 2m): %s %+v %v; want the order left alone", now, payBy, sum, found, err)
		}
	}
	if probes != 0 {
		t.Errorf("the workflow of an order within its deadline was asked about %d times, want 0", probes)
	}
	checkStock(t, store, map[string]int64{"A": 7})
	sum, _, _, _, err := r.Leaks(ctx, payBy.Add(3*time.Minute), "", 10, nil)
	if err != nil || sum.LeakedOrders != 1 || sum.LeakedUnits != 3 {
		t.Fatalf("Leaks past the deadline and the grace: %s %v; want the order closed and its 3 units back", sum, err)
	}
	rec, err := store.Order(ctx, "o1")
	if err != nil || rec.Status != ordersaga.StatusExpired {
		t.Fatalf("order after the repair: %s, %v; want EXPIRED", rec.Status, err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	if sum, _, _, _, err := r.Leaks(ctx, payBy.Add(time.Hour), "", 10, nil); err != nil || sum.LeakedOrders != 0 {
		t.Errorf("a second run: %s %v; want nothing", sum, err)
	}
}
