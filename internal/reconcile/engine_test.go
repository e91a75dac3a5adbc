package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

func rcDeduct(ctx context.Context, store *sqlstore.Store, order, sku string, qty int64) error {
	_, err := store.Deduct(ctx, ordersaga.DeductInput{OrderID: order, UserID: "u", Currency: "CNY",
		PayBy: time.Now().Add(time.Hour), Lines: []ordersaga.Line{{SKU: sku, Qty: qty}}})
	return err
}

func rcStock(t testing.TB, store *sqlstore.Store, sku string) int64 {
	t.Helper()
	inv, err := store.Inventory(context.Background(), sku)
	if err != nil {
		t.Fatal(err)
	}
	return inv.Stock
}

// The reconciler's compare-and-set never repairs a counter that is right: orders reserve, deduct, confirm,
// restore and release as fast as the stores allow while the reconciler checks the SKU back to back. Every
// difference it sees is an order in flight; none may be taken for drift.
func TestReconciler_NoFalseRepairWhileOrdersRace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku, start = "CAS", 300
	if err := store.SetInventory(ctx, sku, start, 100); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetAvailable(ctx, sku, start); err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 8, 80
	var soldUnits, flows atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := range perWorker {
				order := fmt.Sprintf("w%d-%03d", w, i)
				qty := int64(1 + rng.IntN(3))
				if _, err := rs.Reserve(ctx, order, "", sku, qty); err != nil {
					if _, sold := ordersaga.IsSoldOut(err); !sold {
						t.Errorf("reserve %s: %v", order, err)
					}
					continue
				}
				flows.Add(1)
				if rng.IntN(5) == 0 { // rejected on another line: released before any deduct
					if _, err := rs.Release(ctx, order, "", sku); err != nil {
						t.Errorf("release %s: %v", order, err)
					}
					continue
				}
				if err := rcDeduct(ctx, store, order, sku, qty); err != nil {
					t.Errorf("deduct %s: %v", order, err)
					continue
				}
				if _, err := rs.Confirm(ctx, order, sku); err != nil {
					t.Errorf("confirm %s: %v", order, err)
				}
				if rng.IntN(3) == 0 {
					soldUnits.Add(qty)
					continue
				}
				// cancelled: the DB first, then Redis
				if _, err := store.Restore(ctx, order, []ordersaga.Line{{SKU: sku, Qty: qty}}); err != nil {
					t.Errorf("restore %s: %v", order, err)
				}
				if _, err := rs.Release(ctx, order, "", sku); err != nil {
					t.Errorf("release %s: %v", order, err)
				}
			}
		})
	}
	rec := &reconcile.Reconciler{Redis: rs, Store: store, Grace: time.Hour, RunID: "cas-test"}
	var during reconcile.Summary
	runs := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		default:
		}
		s, found, err := rec.SKU(ctx, sku, sqlstore.ResyncNone)
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if len(found) > 0 {
			t.Errorf("reconciliation under load found %+v", found)
		}
		during.Add(s)
		runs++
	}
	if during.Repairs() != 0 || during.Drifted != 0 {
		t.Errorf("reconciliation under load: %s", during)
	}
	final, found, err := rec.SKU(ctx, sku, sqlstore.ResyncNone)
	if err != nil || final.Repairs() != 0 || len(found) != 0 {
		t.Errorf("final run: %s %v %v", final, found, err)
	}
	avail, _, _ := rs.Available(ctx, sku)
	holds, _ := rs.Holds(ctx, sku)
	if s := rcStock(t, store, sku); avail != s || len(holds) != 0 || s != start-soldUnits.Load() {
		t.Errorf("quiet: redis %d (holds %v), db %d, want both %d", avail, holds, s, start-soldUnits.Load())
	}
	t.Logf("%d order flows raced %d reconciliations of the same SKU: %s", flows.Load(), runs, during)
}

// A reserve that finds its SKU unloaded loads it from the database: stock minus the holds whose deduct has
// not landed, minus the restores whose release is still to come; a hold whose deduct stands is not counted
// twice.
func TestReserveLine_ColdStartLoadsTheTruth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku = "COLD"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.SetInventory(ctx, sku, 10, 100))
	must(rs.SetAvailable(ctx, sku, 10))
	_, err := rs.Reserve(ctx, "held", "", sku, 3) // reserved, deduct still to come
	must(err)
	_, err = rs.Reserve(ctx, "deducted", "", sku, 2) // deducted, confirm still to come
	must(err)
	must(rcDeduct(ctx, store, "deducted", sku, 2))
	_, err = rs.Reserve(ctx, "restored", "", sku, 1) // deducted, confirmed, restored: release still to come
	must(err)
	must(rcDeduct(ctx, store, "restored", sku, 1))
	_, err = rs.Confirm(ctx, "restored", sku)
	must(err)
	_, err = store.Restore(ctx, "restored", []ordersaga.Line{{SKU: sku, Qty: 1}})
	must(err)
	must(rs.Client().Del(ctx, rs.AvailKey(sku)).Err()) // the counter is lost

	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	acts := &activities.Activities{Redis: rs, Store: store}
	aenv.RegisterActivity(acts)
	v, err := aenv.ExecuteActivity(acts.ReserveLine, activities.LineInput{OrderID: "new", SKU: sku, Qty: 1})
	if err != nil {
		t.Fatalf("reserve after the counter was lost: %v", err)
	}
	var out ordersaga.ReserveOutcome
	must(v.Get(&out))
	// db.stock 8 − held 3 − restored-not-released 1 = 4 loaded; the new order takes 1.
	if avail, loaded, _ := rs.Available(ctx, sku); out != ordersaga.Reserved || !loaded || avail != 3 {
		t.Errorf("reserve = %s, avail %d (loaded %v); want reserved with 3 left", out, avail, loaded)
	}
	// The pending release lands, and the counter equals the truth: 8 − held 3 − new 1 = 4.
	_, err = rs.Release(ctx, "restored", "", sku)
	must(err)
	if avail, _, _ := rs.Available(ctx, sku); avail != 4 {
		t.Errorf("avail after the release = %d, want 4", avail)
	}
}

// Redis unreachable: with the fallback on, the reserve holds nothing, answers db_only and marks the SKU for
// re-sync (once per interval); with it off, it fails retryably as before.
func TestReserveLine_RedisDownFallsBackToTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStore(t)
	if err := store.SetInventory(ctx, "DOWN", 5, 100); err != nil {
		t.Fatal(err)
	}
	rs := testenv.UnreachableRedis(t)

	for _, fallback := range []bool{true, false} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			var env testsuite.WorkflowTestSuite
			aenv := env.NewTestActivityEnvironment()
			acts := &activities.Activities{Redis: rs, Store: store, DBFallback: fallback}
			aenv.RegisterActivity(acts)
			for i := range 3 {
				v, err := aenv.ExecuteActivity(acts.ReserveLine, activities.LineInput{OrderID: fmt.Sprintf("o%d-%v", i, fallback), SKU: "DOWN", Qty: 2})
				if !fallback {
					if err == nil {
						t.Fatal("reserve with Redis down and the fallback off succeeded")
					}
					continue
				}
				if err != nil {
					t.Fatalf("reserve %d: %v", i, err)
				}
				var out ordersaga.ReserveOutcome
				if err := v.Get(&out); err != nil || out != ordersaga.ReservedInDB {
					t.Errorf("reserve %d = %q, %v; want %q", i, out, err, ordersaga.ReservedInDB)
				}
			}
		})
	}
	rows, err := store.Anomalies(ctx, sqlstore.FallbackRunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Kind != sqlstore.KindRedisDown || rows[0].SKU != "DOWN" {
		t.Errorf("re-sync marks = %+v, want one redis_down row for DOWN", rows)
	}
	if s := rcStock(t, store, "DOWN"); s != 5 {
		t.Errorf("db stock = %d: the fallback reserve must take nothing (the deduct does)", s)
	}
}
