package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// payBy is a deadline with microsecond precision, so it survives MySQL DATETIME(6) unchanged.
var payBy = time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)

func line(sku string, qty int64) ordersaga.Line { return ordersaga.Line{SKU: sku, Qty: qty} }

func deductIn(orderID string, lines ...ordersaga.Line) ordersaga.DeductInput {
	return ordersaga.DeductInput{OrderID: orderID, UserID: "u-" + orderID, Currency: "EUR", PayBy: payBy, Lines: lines}
}

func stockOf(t testing.TB, store *sqlstore.Store, sku string) int64 {
	t.Helper()
	inv, err := store.Inventory(t.Context(), sku)
	if err != nil {
		t.Fatalf("stock of %s: %v", sku, err)
	}
	return inv.Stock
}

func checkStock(t *testing.T, store *sqlstore.Store, want map[string]int64) {
	t.Helper()
	for sku, w := range want {
		if got := stockOf(t, store, sku); got != w {
			t.Errorf("stock of %s = %d, want %d", sku, got, w)
		}
	}
}

// ledgerRow is one stock_ledger row.
type ledgerRow struct {
	OrderID string
	SKU     string
	Op      string
	Qty     int64
}

func (r ledgerRow) String() string { return fmt.Sprintf("%s/%s %s %d", r.OrderID, r.SKU, r.Op, r.Qty) }

// ledgerOf returns the ledger rows of one order (all orders when orderID is empty) in a stable order.
func ledgerOf(t testing.TB, store *sqlstore.Store, orderID string) []ledgerRow {
	t.Helper()
	var rows []ledgerRow
	q := store.DB().WithContext(t.Context()).Table("stock_ledger").Select("order_id, sku, op, qty").Order("order_id, sku, op")
	if orderID != "" {
		q = q.Where("order_id = ?", orderID)
	}
	if err := q.Scan(&rows).Error; err != nil {
		t.Fatalf("ledger: %v", err)
	}
	return rows
}

func checkLedger(t *testing.T, store *sqlstore.Store, orderID string, want ...ledgerRow) {
	t.Helper()
	got := ledgerOf(t, store, orderID)
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("ledger of %s = %v, want %v", orderID, got, want)
	}
}

func countRows(t testing.TB, store *sqlstore.Store, table, orderID string) int64 {
	t.Helper()
	var n int64
	if err := store.DB().WithContext(t.Context()).Table(table).Where("order_id = ?", orderID).Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func checkNoOrder(t *testing.T, store *sqlstore.Store, orderID string) {
	t.Helper()
	if _, err := store.Order(t.Context(), orderID); !errors.Is(err, ordersaga.ErrNotFound) {
		t.Errorf("Order(%s) = %v, want ErrNotFound", orderID, err)
	}
	if n := countRows(t, store, "order_lines", orderID); n != 0 {
		t.Errorf("order %s has %d order_lines rows, want 0", orderID, n)
	}
}

// checkI4 asserts invariant I4 over the whole ledger as queries: per (order, SKU) at most one DEDUCT and one
// RESTORE row, and a RESTORE gives back exactly what was deducted or is a zero tombstone with no DEDUCT.
func checkI4(t testing.TB, store *sqlstore.Store) {
	t.Helper()
	db := store.DB().WithContext(t.Context())
	var dups []struct {
		OrderID string
		SKU     string
		Op      string
		N       int64
	}
	if err := db.Raw(`SELECT order_id, sku, op, COUNT(*) AS n FROM stock_ledger
		GROUP BY order_id, sku, op HAVING COUNT(*) > 1`).Scan(&dups).Error; err != nil {
		t.Fatalf("I4 duplicates: %v", err)
	}
	for _, d := range dups {
		t.Errorf("I4: %s/%s has %d %s rows", d.OrderID, d.SKU, d.N, d.Op)
	}
	var bad []struct {
		OrderID  string
		SKU      string
		Restored int64
		Deducted *int64
	}
	if err := db.Raw(`SELECT r.order_id AS order_id, r.sku AS sku, r.qty AS restored, d.qty AS deducted
		FROM stock_ledger r LEFT JOIN stock_ledger d ON d.order_id = r.order_id AND d.sku = r.sku AND d.op = ?
		WHERE r.op = ? AND ((d.id IS NULL AND r.qty <> 0) OR (d.id IS NOT NULL AND d.qty <> r.qty))`,
		sqlstore.OpDeduct, sqlstore.OpRestore).Scan(&bad).Error; err != nil {
		t.Fatalf("I4 restores: %v", err)
	}
	for _, b := range bad {
		if b.Deducted == nil {
			t.Errorf("I4: %s/%s restored %d without a deduct", b.OrderID, b.SKU, b.Restored)
		} else {
			t.Errorf("I4: %s/%s deducted %d but restored %d (a deduct after its tombstone?)", b.OrderID, b.SKU, *b.Deducted, b.Restored)
		}
	}
}

func TestDeduct_TakesStockAndRecordsTheOrder(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 250}, testenv.Item{SKU: "B", Stock: 5, Price: 1000})
	ctx := t.Context()
	res, err := store.Deduct(ctx, deductIn("o1", line("B", 1), line("A", 3)))
	if err != nil {
		t.Fatalf("Deduct: %v", err)
	}
	wantLines := []ordersaga.Line{{SKU: "A", Qty: 3, UnitPriceCents: 250}, {SKU: "B", Qty: 1, UnitPriceCents: 1000}}
	if !slices.Equal(res.Lines, wantLines) || res.AmountCents != 1750 || res.AlreadyDone {
		t.Errorf("Deduct = %+v, want lines %v, amount 1750, not already done", res, wantLines)
	}
	checkStock(t, store, map[string]int64{"A": 7, "B": 4})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpDeduct, 3}, ledgerRow{"o1", "B", sqlstore.OpDeduct, 1})

	rec, err := store.Order(ctx, "o1")
	if err != nil {
		t.Fatalf("Order: %v", err)
	}
	if rec.Status != ordersaga.StatusAwaitingPayment || rec.AmountCents != 1750 || rec.UserID != "u-o1" || rec.Currency != "EUR" {
		t.Errorf("order = %+v, want AWAITING_PAYMENT, 1750 EUR for u-o1", rec)
	}
	if rec.PayBy == nil || !rec.PayBy.Equal(payBy) {
		t.Errorf("order pay_by = %v, want %v", rec.PayBy, payBy)
	}
	if !slices.Equal(rec.Lines, wantLines) {
		t.Errorf("order lines = %v, want %v", rec.Lines, wantLines)
	}
	checkI4(t, store)
}

func TestDeduct_DuplicateReturnsTheFirstResult(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 250})
	first, err := store.Deduct(t.Context(), deductIn("o1", line("A", 3)))
	if err != nil {
		t.Fatal(err)
	}
	// The price changes between the attempts: the retry must still answer what the first one committed.
	if err := store.SetInventory(t.Context(), "A", 7, 999); err != nil {
		t.Fatal(err)
	}
	again, err := store.Deduct(t.Context(), deductIn("o1", line("A", 3)))
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !again.AlreadyDone || !slices.Equal(again.Lines, first.Lines) || again.AmountCents != first.AmountCents {
		t.Errorf("retry = %+v, want AlreadyDone with %+v", again, first)
	}
	checkStock(t, store, map[string]int64{"A": 7})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpDeduct, 3})
	checkI4(t, store)
}

func TestDeduct_SoldOutLineRollsBackEveryLine(t *testing.T) {
	t.Parallel()
	for _, short := range []string{"A", "B", "C"} { // the short line sorts first, in the middle, last
		t.Run("short "+short, func(t *testing.T) {
			t.Parallel()
			items := []testenv.Item{{SKU: "A", Stock: 10, Price: 100}, {SKU: "B", Stock: 10, Price: 200}, {SKU: "C", Stock: 10, Price: 300}}
			want := map[string]int64{}
			for i := range items {
				if items[i].SKU == short {
					items[i].Stock = 1
				}
				want[items[i].SKU] = items[i].Stock
			}
			store := testenv.MustOpenStoreWith(t, items...)
			_, err := store.Deduct(t.Context(), deductIn("o1", line("C", 2), line("A", 2), line("B", 2)))
			var so *ordersaga.SoldOutError
			if !errors.As(err, &so) || so.SKU != short {
				t.Fatalf("Deduct = %v, want SoldOutError naming %s", err, short)
			}
			checkStock(t, store, want)
			checkLedger(t, store, "o1")
			checkNoOrder(t, store, "o1")
		})
	}
}

func TestDeduct_UnknownSKU(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	_, err := store.Deduct(t.Context(), deductIn("o1", line("A", 1), line("NOPE", 1)))
	if !errors.Is(err, ordersaga.ErrUnknownSKU) {
		t.Fatalf("Deduct = %v, want ErrUnknownSKU", err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "o1")
	checkNoOrder(t, store, "o1")
}

func TestDeduct_BadInputIsRefused(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	cases := map[string]ordersaga.DeductInput{
		"no order id":   deductIn("", line("A", 1)),
		"no lines":      deductIn("o1"),
		"zero qty":      deductIn("o1", line("A", 0)),
		"negative qty":  deductIn("o1", line("A", -2)),
		"empty sku":     deductIn("o1", line("", 1)),
		"sku appears 2": deductIn("o1", line("A", 1), line("A", 1)),
	}
	for name, in := range cases {
		if _, err := store.Deduct(t.Context(), in); err == nil {
			t.Errorf("%s: Deduct accepted %+v", name, in)
		}
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "")
}

func TestRestore_GivesStockBackOnce(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100}, testenv.Item{SKU: "B", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 3), line("B", 2))); err != nil {
		t.Fatal(err)
	}
	lines := []ordersaga.Line{line("B", 2), line("A", 3)}
	out, err := store.Restore(ctx, "o1", lines)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if want := []ordersaga.RestoreLine{{SKU: "A", Qty: 3}, {SKU: "B", Qty: 2}}; !slices.Equal(out, want) {
		t.Errorf("Restore = %+v, want %+v", out, want)
	}
	checkStock(t, store, map[string]int64{"A": 10, "B": 10})

	out, err = store.Restore(ctx, "o1", lines)
	if err != nil {
		t.Fatalf("second Restore: %v", err)
	}
	if want := []ordersaga.RestoreLine{{SKU: "A", Duplicate: true}, {SKU: "B", Duplicate: true}}; !slices.Equal(out, want) {
		t.Errorf("second Restore = %+v, want %+v", out, want)
	}
	checkStock(t, store, map[string]int64{"A": 10, "B": 10})
	checkLedger(t, store, "o1",
		ledgerRow{"o1", "A", sqlstore.OpDeduct, 3}, ledgerRow{"o1", "A", sqlstore.OpRestore, 3},
		ledgerRow{"o1", "B", sqlstore.OpDeduct, 2}, ledgerRow{"o1", "B", sqlstore.OpRestore, 2})

	// A deduct retried after its compensation is refused (not a duplicate to build on) and takes nothing.
	res, err := store.Deduct(ctx, deductIn("o1", line("A", 3), line("B", 2)))
	if !errors.Is(err, ordersaga.ErrCompensated) {
		t.Errorf("Deduct after restore = %+v, %v; want ErrCompensated", res, err)
	}
	checkStock(t, store, map[string]int64{"A": 10, "B": 10})
	checkI4(t, store)
}

func TestRestore_BeforeDeductWritesTombstone(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	out, err := store.Restore(ctx, "o1", []ordersaga.Line{line("A", 3)})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if want := []ordersaga.RestoreLine{{SKU: "A", Tombstone: true}}; !slices.Equal(out, want) {
		t.Errorf("Restore = %+v, want %+v", out, want)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpRestore, 0})

	// The hanging deduct arrives after its compensation: refused, nothing taken, no order recorded.
	_, err = store.Deduct(ctx, deductIn("o1", line("A", 3)))
	if !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("late Deduct = %v, want ErrCompensated", err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "o1", ledgerRow{"o1", "A", sqlstore.OpRestore, 0})
	checkNoOrder(t, store, "o1")

	// And the compensation retried is a duplicate.
	out, err = store.Restore(ctx, "o1", []ordersaga.Line{line("A", 3)})
	if err != nil || !slices.Equal(out, []ordersaga.RestoreLine{{SKU: "A", Duplicate: true}}) {
		t.Errorf("second Restore = %+v, %v; want duplicate", out, err)
	}
	checkI4(t, store)
}

func TestCloseOrder_RecordsAMissingOrderAndRefusesItsLateDeduct(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{
		OrderID: "o1", UserID: "u1", Status: ordersaga.StatusRejected, Currency: "EUR",
		ClosedReason: "sold out: A", Lines: []ordersaga.Line{line("A", 2)},
	})
	if err != nil {
		t.Fatalf("CloseOrder: %v", err)
	}
	if rec.Status != ordersaga.StatusRejected || rec.ClosedReason != "sold out: A" || rec.UserID != "u1" ||
		!slices.Equal(rec.Lines, []ordersaga.Line{line("A", 2)}) {
		t.Errorf("closed order = %+v, want REJECTED with its line", rec)
	}
	_, err = store.Deduct(ctx, deductIn("o1", line("A", 2)))
	if !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("Deduct of a rejected order = %v, want ErrCompensated", err)
	}
	checkStock(t, store, map[string]int64{"A": 10})
	checkLedger(t, store, "o1")
	if got, _ := store.Order(ctx, "o1"); got.Status != ordersaga.StatusRejected {
		t.Errorf("status after late deduct = %s, want REJECTED", got.Status)
	}
}

func TestCloseOrder_NeverChangesAFinalStatus(t *testing.T) {
	t.Parallel()
	closing := []ordersaga.Status{ordersaga.StatusExpired, ordersaga.StatusCancelled, ordersaga.StatusRejected}
	for _, final := range []ordersaga.Status{ordersaga.StatusPaid, ordersaga.StatusExpired, ordersaga.StatusCancelled, ordersaga.StatusRejected} {
		t.Run(string(final), func(t *testing.T) {
			t.Parallel()
			store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
			ctx := t.Context()
			if _, err := store.Deduct(ctx, deductIn("o1", line("A", 1))); err != nil {
				t.Fatal(err)
			}
			if final == ordersaga.StatusPaid {
				if err := store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 100, Currency: "EUR"}, payBy); err != nil {
					t.Fatal(err)
				}
			} else {
				rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: final, ClosedReason: "first"})
				if err != nil || rec.Status != final {
					t.Fatalf("CloseOrder(%s) = %s, %v", final, rec.Status, err)
				}
			}
			for _, st := range closing {
				rec, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: st, ClosedReason: "stale"})
				if err != nil {
					t.Fatalf("CloseOrder(%s) over %s: %v", st, final, err)
				}
				if rec.Status != final || rec.ClosedReason == "stale" {
					t.Errorf("CloseOrder(%s) turned %s into %s (reason %q)", st, final, rec.Status, rec.ClosedReason)
				}
			}
		})
	}
}

func TestCloseOrder_RefusesANonClosingStatus(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	for _, st := range []ordersaga.Status{ordersaga.StatusPaid, ordersaga.StatusAwaitingPayment, ordersaga.StatusReserving, "BOGUS"} {
		if _, err := store.CloseOrder(t.Context(), ordersaga.OrderRecord{OrderID: "o1", Status: st}); err == nil {
			t.Errorf("CloseOrder(%s) accepted", st)
		}
	}
	checkNoOrder(t, store, "o1")
}

func TestMarkPaid_PaysOnce(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 2))); err != nil {
		t.Fatal(err)
	}
	paidAt := payBy.Add(-time.Hour)
	p := ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 200, Currency: "EUR"}
	if err := store.MarkPaid(ctx, p, paidAt); err != nil {
		t.Fatalf("MarkPaid: %v", err)
	}
	// The same event again (a retried activity or a redelivered webhook) is a no-op.
	if err := store.MarkPaid(ctx, p, paidAt.Add(time.Minute)); err != nil {
		t.Fatalf("MarkPaid again: %v", err)
	}
	rec, err := store.Order(ctx, "o1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != ordersaga.StatusPaid || rec.PaymentEventID != "e1" || rec.PaidAt == nil || !rec.PaidAt.Equal(paidAt) {
		t.Errorf("order = status %s, event %q, paid_at %v; want PAID by e1 at %v", rec.Status, rec.PaymentEventID, rec.PaidAt, paidAt)
	}
	pay, err := store.Payment(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if pay.Result != ordersaga.PaymentApplied || pay.OrderID != "o1" || pay.AmountCents != 200 {
		t.Errorf("payment = %+v, want applied 200 for o1", pay)
	}
	// A second, different payment for a paid order is not applied.
	err = store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e2", OrderID: "o1", AmountCents: 200, Currency: "EUR"}, paidAt)
	if !errors.Is(err, ordersaga.ErrOrderNotPayable) {
		t.Errorf("MarkPaid with another event = %v, want ErrOrderNotPayable", err)
	}
	if n := countRows(t, store, "payments", "o1"); n != 1 {
		t.Errorf("payments of o1 = %d, want 1", n)
	}
}

func TestMarkPaid_ClosedOrMissingOrderIsNotPayable(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("o1", line("A", 2))); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: ordersaga.StatusExpired, ClosedReason: "deadline"}); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"o1", "missing"} {
		err := store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e-" + order, OrderID: order, AmountCents: 200, Currency: "EUR"}, payBy)
		if !errors.Is(err, ordersaga.ErrOrderNotPayable) {
			t.Errorf("MarkPaid(%s) = %v, want ErrOrderNotPayable", order, err)
		}
		if n := countRows(t, store, "payments", order); n != 0 {
			t.Errorf("payments of %s = %d, want 0", order, n)
		}
	}
	if rec, _ := store.Order(ctx, "o1"); rec.Status != ordersaga.StatusExpired || rec.PaidAt != nil {
		t.Errorf("order after refused payment = %s paid_at %v, want EXPIRED unpaid", rec.Status, rec.PaidAt)
	}
}

func TestRecordPayment_FirstRecordWins(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	ctx := t.Context()
	first, inserted, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{
		EventID: "e1", OrderID: "o1", AmountCents: 500, Currency: "EUR", Result: ordersaga.PaymentRefunded, Detail: "order expired",
	})
	if err != nil || !inserted {
		t.Fatalf("RecordPayment = %v, inserted %v", err, inserted)
	}
	if first.Result != ordersaga.PaymentRefunded || first.RefundedAt == nil || first.Detail != "order expired" || first.AmountCents != 500 {
		t.Errorf("first record = %+v, want refunded 500 with refunded_at set", first)
	}
	second, inserted, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{
		EventID: "e1", OrderID: "o1", AmountCents: 999, Currency: "USD", Result: ordersaga.PaymentRejectedAmount, Detail: "again",
	})
	if err != nil {
		t.Fatalf("second RecordPayment: %v", err)
	}
	if inserted {
		t.Error("second RecordPayment inserted, want the first record to stand")
	}
	if !reflect.DeepEqual(second, first) {
		t.Errorf("second RecordPayment = %+v, want the first %+v", second, first)
	}
	if n := countRows(t, store, "payments", "o1"); n != 1 {
		t.Errorf("payments of o1 = %d, want 1", n)
	}
	if _, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{OrderID: "o1"}); err == nil {
		t.Error("RecordPayment without an event ID accepted")
	}
}

func TestSetInventory(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	ctx := t.Context()
	for _, c := range []struct {
		sku          string
		stock, price int64
	}{{"A", -1, 100}, {"A", 1, -1}, {"", 1, 1}} {
		if err := store.SetInventory(ctx, c.sku, c.stock, c.price); err == nil {
			t.Errorf("SetInventory(%q, %d, %d) accepted", c.sku, c.stock, c.price)
		}
	}
	if _, err := store.Inventory(ctx, "A"); !errors.Is(err, ordersaga.ErrNotFound) {
		t.Fatalf("Inventory(A) after refused sets = %v, want ErrNotFound", err)
	}
	for _, c := range []struct{ stock, price int64 }{{5, 100}, {5, 100}, {8, 120}, {0, 0}} {
		if err := store.SetInventory(ctx, "A", c.stock, c.price); err != nil {
			t.Fatalf("SetInventory(A, %d, %d): %v", c.stock, c.price, err)
		}
		inv, err := store.Inventory(ctx, "A")
		if err != nil {
			t.Fatal(err)
		}
		if inv.Stock != c.stock || inv.PriceCents != c.price {
			t.Errorf("inventory = %+v, want stock %d price %d", inv, c.stock, c.price)
		}
	}
	if err := store.SetInventory(ctx, "A", -3, 0); err == nil {
		t.Error("SetInventory of an existing SKU to -3 accepted")
	}
	checkStock(t, store, map[string]int64{"A": 0})
}

func TestLedger_OnceOnlyPerOrderSKUAndOp(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 20, Price: 100}, testenv.Item{SKU: "B", Stock: 20, Price: 100})
	ctx := t.Context()
	both := []ordersaga.Line{line("A", 2), line("B", 1)}
	lateDeduct := func(order string) func() error {
		return func() error {
			if _, err := store.Deduct(ctx, deductIn(order, both...)); !errors.Is(err, ordersaga.ErrCompensated) {
				return fmt.Errorf("late deduct of %s = %v, want ErrCompensated", order, err)
			}
			return nil
		}
	}
	// Every anomaly at least twice: duplicates, null compensation, hanging.
	steps := []func() error{
		func() error { _, err := store.Deduct(ctx, deductIn("o1", both...)); return err },
		func() error { _, err := store.Deduct(ctx, deductIn("o1", both...)); return err },
		func() error { _, err := store.Restore(ctx, "o1", both); return err },
		func() error { _, err := store.Restore(ctx, "o1", both); return err },
		func() error { _, err := store.Restore(ctx, "o2", both); return err },
		func() error { _, err := store.Restore(ctx, "o2", both); return err },
		lateDeduct("o2"),
		lateDeduct("o2"),
		func() error { _, err := store.Deduct(ctx, deductIn("o3", both...)); return err },
		func() error { _, err := store.Deduct(ctx, deductIn("o3", both...)); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	checkI4(t, store)
	checkStock(t, store, map[string]int64{"A": 18, "B": 19}) // only o3 holds units

	// The UNIQUE key is the last guard: a second DEDUCT row cannot be written even by hand.
	err := store.DB().WithContext(ctx).Exec("INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES (?, ?, ?, ?)",
		"o3", "A", sqlstore.OpDeduct, 2).Error
	if err == nil {
		t.Error("a second DEDUCT row for o3/A was accepted")
	}
}

func TestMarkPaidRefusesAnEventRecordedOtherwise(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := testenv.MustOpenStore(t)
	if err := store.SetInventory(ctx, "MP-1", 10, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Deduct(ctx, ordersaga.DeductInput{OrderID: "mp-o1", UserID: "u", Currency: "CNY",
		PayBy: time.Now().Add(time.Hour), Lines: []ordersaga.Line{{SKU: "MP-1", Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{EventID: "mp-e1", OrderID: "mp-o1",
		AmountCents: 100, Currency: "CNY", Result: ordersaga.PaymentRefunded}); err != nil {
		t.Fatal(err)
	}
	err := store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "mp-e1", OrderID: "mp-o1", AmountCents: 100, Currency: "CNY"}, time.Now())
	if !errors.Is(err, ordersaga.ErrOrderNotPayable) {
		t.Fatalf("MarkPaid of a refunded event: got %v, want ErrOrderNotPayable", err)
	}
	rec, err := store.Order(ctx, "mp-o1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != ordersaga.StatusAwaitingPayment {
		t.Fatalf("order status %s after a refused MarkPaid, want AWAITING_PAYMENT (rolled back)", rec.Status)
	}
}

// I1 read while deducts and restores commit: every read of stock + Σdeduct − Σrestore is exactly what was
// stocked. Read in two statements (the stock, then the ledger), a restore landing between them counts its
// units twice; the chaos soak's checker reported such a skew as a violation.
func TestConservation_OneSnapshotWhileDeductsAndRestoresCommit(t *testing.T) {
	t.Parallel()
	const sku, start, orders = "SNAP", 100_000, 300
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: sku, Stock: start, Price: 100})
	ctx := t.Context()

	done := make(chan error, 1)
	go func() {
		for i := range orders {
			order := fmt.Sprintf("snap%04d", i)
			lines := []ordersaga.Line{line(sku, int64(1+i%5))}
			if _, err := store.Deduct(ctx, deductIn(order, lines...)); err != nil {
				done <- fmt.Errorf("deduct %s: %w", order, err)
				return
			}
			if _, err := store.Restore(ctx, order, lines); err != nil {
				done <- fmt.Errorf("restore %s: %w", order, err)
				return
			}
		}
		done <- nil
	}()
	var reads, moving int
	var last sqlstore.Conservation
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		c, err := store.Conservation(ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if c != last {
			moving++
			last = c
		}
		if got := c.Stock + c.Deducted - c.Restored; got != start {
			t.Fatalf("read %d: stock %d + Σdeduct %d − Σrestore %d = %d, want %d", reads, c.Stock, c.Deducted, c.Restored, got, start)
		}
	}
	if moving < 10 {
		t.Fatalf("only %d of %d reads saw the ledger move: the reads did not overlap the writes", moving, reads)
	}
	if _, err := store.Conservation(ctx, "NOPE"); !errors.Is(err, ordersaga.ErrUnknownSKU) {
		t.Errorf("conservation of an unknown SKU: %v, want ErrUnknownSKU", err)
	}
	t.Logf("db %s: %d reads, %d saw a new ledger state, every one conserved %d", store.Dialect(), reads, moving, start)
}
