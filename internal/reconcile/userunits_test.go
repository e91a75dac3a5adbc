package reconcile_test

import (
	"maps"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// Reconciliation squares the per-user counts with the database: after Redis lost a user's count (a restart
// without persistence keeps nothing, a cold load brings back the counter only), the orders whose deduct
// stands are counted again; an order the database restored whose release never came off the count is
// dropped; an order that holds units now (marker 'H', deduct still to come) is left alone. Each repair is an
// anomaly row, and a second run finds nothing.
func TestReconcile_SquaresPerUserCounts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStore(t)
	rs := testenv.MustOpenRedis(t)
	const sku = "REC-LIM"
	if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 100, PriceCents: 10, PerUserLimit: 3}); err != nil {
		t.Fatal(err)
	}
	deduct := func(order, user string, qty int64) {
		t.Helper()
		if _, err := rs.Reserve(ctx, order, user, sku, qty); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Deduct(ctx, ordersaga.DeductInput{OrderID: order, UserID: user, Currency: "CNY", PayBy: time.Now().Add(time.Hour),
			Lines: []ordersaga.Line{{SKU: sku, Qty: qty}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Confirm(ctx, order, sku); err != nil {
			t.Fatal(err)
		}
	}
	deduct("o-a1", "a", 2)
	deduct("o-b1", "b", 1)
	deduct("o-b2", "b", 1)
	// a's count lost (as after a Redis restart); o-b2 restored in the database, its release never came.
	if err := rs.Client().Del(ctx, rs.UserKey(sku, "a")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Restore(ctx, "o-b2", []ordersaga.Line{{SKU: sku, Qty: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.Client().Set(ctx, rs.MarkerKey(sku, "o-b2"), "R:1", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	// c holds a unit right now: reserved, not deducted yet.
	if _, err := rs.Reserve(ctx, "o-c1", "c", sku, 1); err != nil {
		t.Fatal(err)
	}

	rec := &reconcile.Reconciler{Redis: rs, Store: store, Grace: time.Hour, RunID: "user-units"}
	sum, found, err := rec.SKU(ctx, sku, sqlstore.ResyncNone)
	if err != nil {
		t.Fatal(err)
	}
	if sum.UserUnitsFixed != 2 {
		t.Errorf("user_units_fixed = %d (%v), want 2: a's o-a1 added, b's o-b2 dropped", sum.UserUnitsFixed, found)
	}
	kinds := map[string]string{}
	for _, a := range found {
		kinds[a.OrderID] = a.Kind
	}
	if kinds["o-a1"] != sqlstore.KindUserUnitsMissing || kinds["o-b2"] != sqlstore.KindUserUnitsStray {
		t.Errorf("anomalies %v, want o-a1 %s and o-b2 %s", kinds, sqlstore.KindUserUnitsMissing, sqlstore.KindUserUnitsStray)
	}
	for user, want := range map[string]map[string]int64{"a": {"o-a1": 2}, "b": {"o-b1": 1}, "c": {"o-c1": 1}} {
		got, err := rs.UserOrders(ctx, sku, user)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("user %s counted %v, want %v", user, got, want)
		}
	}
	// a is at 2 of 3 again in Redis: 2 more are refused without the database.
	if _, err := rs.Reserve(ctx, "o-a2", "a", sku, 2); !isLimitExceeded(err) {
		t.Errorf("a's 2 more after the repair: %v, want limit exceeded", err)
	}
	if sum, found, err := rec.SKU(ctx, sku, sqlstore.ResyncNone); err != nil || sum.UserUnitsFixed != 0 {
		t.Errorf("second run: fixed %d (%v), %v; want nothing to fix", sum.UserUnitsFixed, found, err)
	}
}

func isLimitExceeded(err error) bool { _, ok := ordersaga.IsLimitExceeded(err); return ok }
