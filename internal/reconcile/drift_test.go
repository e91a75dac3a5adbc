package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Every kind of drift at once: one run repairs all of them, a second run finds nothing, and Redis then
// equals the database exactly (I3 quiet) with I1–I4 holding.
func TestReconcile_RepairsEveryDriftOnceThenFindsNothing(t *testing.T) {
	t.Parallel()
	e := startEnv(t, envOptions{})
	ctx := context.Background()
	rdb := e.rs.Client()
	expected := map[string]int64{}
	for _, sku := range []string{"D-OVER", "D-UNDER", "D-GONE", "D-STRAY", "D-MARK", "D-PAID", "D-CLOSED", "D-OK"} {
		e.stock(t, sku, 10)
		expected[sku] = 10
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Redis promises more than the database has, and less.
	must(e.rs.SetAvailable(ctx, "D-OVER", 15))
	must(e.rs.SetAvailable(ctx, "D-UNDER", 4))
	// The counter is lost.
	must(rdb.Del(ctx, e.rs.AvailKey("D-GONE")).Err())
	// A hold without a marker, and a marker without its hold (of an order nobody knows).
	must(rdb.HSet(ctx, e.rs.HoldsKey("D-STRAY"), "ghost-1", 3).Err())
	must(rdb.Set(ctx, e.rs.MarkerKey("D-MARK", "ghost-2"), "H:2", 24*time.Hour).Err())
	// A paid order whose hold was never confirmed: Redis and the DB agree on the units, the hold is stale.
	if _, err := e.rs.Reserve(ctx, "paid-1", "", "D-PAID", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Deduct(ctx, ordersaga.DeductInput{OrderID: "paid-1", UserID: "u", Currency: "CNY",
		PayBy: time.Now().Add(time.Hour), Lines: []ordersaga.Line{{SKU: "D-PAID", Qty: 2}}}); err != nil {
		t.Fatal(err)
	}
	must(e.store.MarkPaid(ctx, ordersaga.PaymentRecord{EventID: "e-paid-1", OrderID: "paid-1", AmountCents: 200, Currency: "CNY"}, time.Now()))
	// A cancelled order whose hold was never released: Redis keeps 3 units from sale.
	if _, err := e.rs.Reserve(ctx, "closed-1", "", "D-CLOSED", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "closed-1", UserID: "u", Status: ordersaga.StatusCancelled,
		Currency: "CNY", ClosedReason: "test", Lines: []ordersaga.Line{{SKU: "D-CLOSED", Qty: 3}}}); err != nil {
		t.Fatal(err)
	}

	first := e.reconcileOnce(t, -1)
	t.Logf("first run: %s", first)
	want := reconcile.Summary{
		SKUs: 8, Drifted: 4, DriftUnits: 5 + 6 + 3, OverUnits: 5, UnderUnits: 6 + 3,
		AvailRepaired: 3, Loaded: 1, StrayHolds: 1, MarkersWithoutHold: 1, HoldsConfirmed: 1, HoldsReleased: 2,
	}
	want.Anomalies = first.Anomalies
	if first != want {
		t.Errorf("first run\n got %+v\nwant %+v", first, want)
	}
	rows, err := e.store.Anomalies(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.SKU+"/"+r.Kind] = r.Action
	}
	for key, action := range map[string]string{
		"D-OVER/" + sqlstore.KindAvailOver:         sqlstore.ActionSetAvail,
		"D-UNDER/" + sqlstore.KindAvailUnder:       sqlstore.ActionSetAvail,
		"D-GONE/" + sqlstore.KindNotLoaded:         sqlstore.ActionLoaded,
		"D-STRAY/" + sqlstore.KindStrayHold:        sqlstore.ActionDropped,
		"D-MARK/" + sqlstore.KindMarkerWithoutHold: sqlstore.ActionHoldReadded,
		"D-MARK/" + sqlstore.KindHoldUnknownOrder:  sqlstore.ActionReleased,
		"D-PAID/" + sqlstore.KindHoldDeducted:      sqlstore.ActionConfirmed,
		"D-CLOSED/" + sqlstore.KindHoldClosedOrder: sqlstore.ActionReleased,
		"D-CLOSED/" + sqlstore.KindAvailUnder:      sqlstore.ActionSetAvail,
	} {
		if got[key] != action {
			t.Errorf("stock_anomalies %s: action %q, want %q", key, got[key], action)
		}
	}
	if len(rows) != first.Anomalies {
		t.Errorf("%d stock_anomalies rows, summary says %d", len(rows), first.Anomalies)
	}

	second := e.reconcileOnce(t, -1)
	t.Logf("second run: %s", second)
	if second.Repairs() != 0 || second.Drifted != 0 || second.Anomalies != 0 || second.SKUs != 8 {
		t.Errorf("second run found something: %+v", second)
	}
	expected["D-PAID"] = 10 // initial stock; 2 sold
	rep := e.check(t, expected, true)
	t.Logf("drift repair: %d repairs in the first run, %d in the second\n%s", first.Repairs(), second.Repairs(), rep)
	if m, _ := e.rs.Marker(ctx, "ghost-2", "D-MARK"); m != "R:2" {
		t.Errorf("marker of ghost-2 = %q, want R:2", m)
	}
	if m, _ := e.rs.Marker(ctx, "paid-1", "D-PAID"); m != "C:2" {
		t.Errorf("marker of paid-1 = %q, want C:2", m)
	}
}
