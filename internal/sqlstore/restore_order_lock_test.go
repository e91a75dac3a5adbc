package sqlstore_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// pauseBefore makes the first statement of store that starts with prefix wait, before it runs, until the
// returned resume is called; paused is closed when it waits. Registered as a GORM callback on the store's
// handle, so the store's own transactions are held at that point, not a copy of them.
func pauseBefore(t *testing.T, store *sqlstore.Store, prefix string) (paused <-chan struct{}, resume func()) {
	t.Helper()
	p, r := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	err := store.DB().Callback().Row().Before("gorm:row").Register("test:pause", func(db *gorm.DB) {
		if strings.HasPrefix(db.Statement.SQL.String(), prefix) && armed.CompareAndSwap(true, false) {
			close(p)
			<-r
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	resume = func() {
		if once.CompareAndSwap(false, true) {
			close(r)
		}
	}
	t.Cleanup(resume)
	return p, resume
}

// TestRestore_AnOrderPaidWhileItRunsKeepsItsUnits: a restore of an order that has no row yet (its deduct
// not committed) must not give back the units of that order if it is deducted and paid while the restore
// runs. The restore is held just before it reads the order's DEDUCT row; meanwhile the deduct and the payment
// try to commit. Whatever then happens, the order is either PAID with its units sold and nothing restored,
// or restored and not paid. The restore used to decide from a plain COUNT of the order's row (a snapshot
// read, and no lock when the row was missing) and then read the DEDUCT row with a locking read, which sees
// the latest commit: a deduct and a payment landing between the two made it restore a PAID order.
func TestRestore_AnOrderPaidWhileItRunsKeepsItsUnits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100})
	paused, resume := pauseBefore(t, store, "SELECT qty FROM stock_ledger")
	lines := []ordersaga.Line{line("A", 3)}

	type restored struct {
		out []ordersaga.RestoreLine
		err error
	}
	restoreDone := make(chan restored, 1)
	go func() {
		out, err := store.Restore(ctx, "o1", lines)
		restoreDone <- restored{out, err}
	}()
	select {
	case <-paused:
	case r := <-restoreDone:
		t.Fatalf("the restore ended (%+v) without reading the order's DEDUCT row", r)
	case <-time.After(30 * time.Second):
		t.Fatal("the restore never reached its read of the DEDUCT row")
	}

	payDone := make(chan error, 1)
	go func() {
		_, err := store.Deduct(ctx, deductIn("o1", lines...))
		if err == nil {
			err = store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e1", OrderID: "o1", AmountCents: 300, Currency: "EUR"}, payBy)
		}
		payDone <- err
	}()
	var payErr error
	landed := false
	select {
	case payErr = <-payDone:
		landed = true // the deduct and the payment committed while the restore waited
	case <-time.After(2 * time.Second):
		// They wait for the restore (a lock it holds, or SQLite's single writer).
	}
	resume()
	r := <-restoreDone
	if !landed {
		payErr = <-payDone
	}
	t.Logf("db %s: deduct and payment committed while the restore waited: %v (then: %v); restore = %+v, %v",
		store.Dialect(), landed, payErr, r.out, r.err)
	if r.err != nil {
		t.Fatalf("restore: %v", r.err)
	}
	if payErr != nil && !errors.Is(payErr, ordersaga.ErrCompensated) && !errors.Is(payErr, ordersaga.ErrOrderNotPayable) {
		t.Fatalf("deduct and payment: %v, want success, ErrCompensated or ErrOrderNotPayable", payErr)
	}

	var back int64
	for _, row := range ledgerOf(t, store, "o1") {
		if row.Op == sqlstore.OpRestore {
			back += row.Qty
		}
	}
	rec, err := store.Order(ctx, "o1")
	paid := err == nil && rec.Status == ordersaga.StatusPaid
	switch {
	case paid && back > 0:
		t.Errorf("the order is PAID and the restore gave back its %d units (restore answered %+v)", back, r.out)
	case paid && stockOf(t, store, "A") != 7:
		t.Errorf("the order is PAID and the stock is %d, want 7", stockOf(t, store, "A"))
	case !paid && stockOf(t, store, "A") != 10:
		t.Errorf("the order is not paid (%v, %v) and the stock is %d, want 10", rec.Status, err, stockOf(t, store, "A"))
	}
	if paid && payErr != nil {
		t.Errorf("the order is PAID but the payment answered %v", payErr)
	}
	checkI4(t, store)
}
