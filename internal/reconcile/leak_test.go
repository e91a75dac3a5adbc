package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// An order whose workflow is terminated while it holds stock: runs before its payment deadline (plus the
// grace period) leave it alone, the first one after restores its units exactly once (DB, then Redis) and
// closes it EXPIRED; later runs find nothing.
func TestReconcile_RestoresALeakedOrderExactlyOnce(t *testing.T) {
	t.Parallel()
	e := startEnv(t, envOptions{})
	ctx := context.Background()
	e.stock(t, "LEAK", 10)
	res, err := orderclient.Place(ctx, e.c, workflows.OrderInput{OrderID: "leak-1", UserID: "u1", Currency: "CNY",
		Lines: []ordersaga.Line{{SKU: "LEAK", Qty: 4}}, PaymentTimeout: 3 * time.Second})
	if err != nil || res.Order.Status != ordersaga.StatusAwaitingPayment {
		t.Fatalf("place: %+v %v", res, err)
	}
	if err := e.c.TerminateWorkflow(ctx, workflows.OrderWorkflowID("leak-1"), "", "operator killed it"); err != nil {
		t.Fatal(err)
	}
	stock := func() int64 {
		inv, err := e.store.Inventory(ctx, "LEAK")
		if err != nil {
			t.Fatal(err)
		}
		return inv.Stock
	}
	if s := stock(); s != 6 {
		t.Fatalf("stock after the reserve = %d, want 6", s)
	}

	young := e.reconcileOnce(t, -1)
	if young.LeakedOrders != 0 || stock() != 6 {
		t.Errorf("run before the payment deadline touched the order: %s (stock %d)", young, stock())
	}
	time.Sleep(time.Until(res.Order.PayBy.Add(100 * time.Millisecond)))
	if graced := e.reconcileOnce(t, time.Hour); graced.LeakedOrders != 0 || stock() != 6 {
		t.Errorf("run within the grace period after the deadline touched the order: %s (stock %d)", graced, stock())
	}
	first := e.reconcileOnce(t, -1)
	if first.LeakedOrders != 1 || first.LeakedUnits != 4 || first.Repairs() != 1 {
		t.Errorf("first run: %s; want one leaked order of 4 units", first)
	}
	second := e.reconcileOnce(t, -1)
	if second.Repairs() != 0 || second.Anomalies != 0 {
		t.Errorf("second run: %s; want nothing", second)
	}
	if s := stock(); s != 10 {
		t.Errorf("stock after reconciliation = %d, want 10", s)
	}
	rec, err := e.store.Order(ctx, "leak-1")
	if err != nil || rec.Status != ordersaga.StatusExpired {
		t.Errorf("order after reconciliation: %+v %v; want EXPIRED", rec.Status, err)
	}
	var restores int64
	if err := e.store.DB().Raw("SELECT COUNT(*) FROM stock_ledger WHERE order_id = ? AND op = ?", "leak-1", sqlstore.OpRestore).
		Scan(&restores).Error; err != nil {
		t.Fatal(err)
	}
	if restores != 1 {
		t.Errorf("%d RESTORE rows for leak-1, want 1", restores)
	}
	rep := e.check(t, map[string]int64{"LEAK": 10}, true)
	t.Logf("leaked order: within grace %s\nfirst %s\nsecond %s\n%s", young, first, second, rep)
}
