package reconcile_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// promise reads what Redis promises for a SKU and the database's truth to compare it with (I3): db.stock minus
// the units of the holds whose deduct the database has not taken (a hold whose deduct stands is already out
// of db.stock). It fails the test when Redis promises more than the truth or is not loaded.
func promise(t testing.TB, store *sqlstore.Store, rs *redisstock.Store, sku string) (avail, truth int64) {
	t.Helper()
	ctx := context.Background()
	avail, loaded, err := rs.Available(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded {
		t.Fatalf("%s is not loaded in Redis", sku)
	}
	holds, err := rs.Holds(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	truth = rcStock(t, store, sku)
	for order, q := range holds {
		var net int64
		if err := store.DB().Raw(`SELECT COALESCE(SUM(CASE WHEN op = ? THEN qty ELSE -qty END), 0) FROM stock_ledger
			WHERE order_id = ? AND sku = ?`, sqlstore.OpDeduct, order, sku).Scan(&net).Error; err != nil {
			t.Fatal(err)
		}
		if net <= 0 {
			truth -= q
		}
	}
	if avail > truth {
		t.Errorf("%s: Redis promises %d, the database has %d (I3)", sku, avail, truth)
	}
	return avail, truth
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An admin stock change while an order's release is still to come (the database restored the order, its
// marker is still 'C'): the release gives those units back to Redis later, so the load must count them as
// already given, or Redis ends above the database.
func TestSetStock_ReleaseStillToComeIsNotPromisedTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku, order = "SYNC-PENDING", "o-pending"
	line := []ordersaga.Line{{SKU: sku, Qty: 3}}
	_, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 10, PriceCents: 100})
	mustOK(t, err)
	_, err = rs.Reserve(ctx, order, "", sku, 3)
	mustOK(t, err)
	mustOK(t, rcDeduct(ctx, store, order, sku, 3))
	_, err = rs.Confirm(ctx, order, sku)
	mustOK(t, err)
	_, err = store.Restore(ctx, order, line) // db.stock back to 10; the release has not run yet
	mustOK(t, err)

	_, err = reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 12, PriceCents: 100})
	mustOK(t, err)
	promise(t, store, rs, sku)

	_, err = rs.Release(ctx, order, "", sku)
	mustOK(t, err)
	if avail, truth := promise(t, store, rs, sku); avail != truth {
		t.Errorf("quiet: Redis %d, database %d; want equal", avail, truth)
	}
}

// An admin stock change while a hold whose deduct committed is still in the hash (its confirm failed): the
// database has already taken those units, so the load must not take them again (Redis would under-promise).
func TestSetStock_DeductedHoldIsNotSubtractedTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku, order = "SYNC-DEDUCTED", "o-deducted"
	_, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 10, PriceCents: 100})
	mustOK(t, err)
	_, err = rs.Reserve(ctx, order, "", sku, 3)
	mustOK(t, err)
	mustOK(t, rcDeduct(ctx, store, order, sku, 3)) // the confirm never comes

	v, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 20, PriceCents: 100})
	mustOK(t, err)
	if avail, truth := promise(t, store, rs, sku); avail != truth || v.RedisAvailable == nil || *v.RedisAvailable != truth {
		t.Errorf("after the set: Redis %d (answered %v), database %d; want equal", avail, v.RedisAvailable, truth)
	}
	_, err = rs.Confirm(ctx, order, sku)
	mustOK(t, err)
	if avail, truth := promise(t, store, rs, sku); avail != truth {
		t.Errorf("after the confirm: Redis %d, database %d; want equal", avail, truth)
	}
}

// beforeRepairAvail runs fn once, just before the first repair_avail.lua call in the given mode reaches
// Redis, that is after its caller took the Redis and the database snapshots: a deterministic interleaving of
// an order (or an admin change) with the script.
func beforeRepairAvail(t testing.TB, rs *redisstock.Store, mode string, fn func()) *atomic.Bool {
	t.Helper()
	fired := new(atomic.Bool)
	rs.Client().AddHook(scriptHook{mode: mode, fired: fired, fn: fn})
	return fired
}

type scriptHook struct {
	mode  string
	fired *atomic.Bool
	fn    func()
}

func (h scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// EVALSHA sha numkeys key... arg...: repair_avail.lua's first argument is its mode.
		args := cmd.Args()
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && len(args) > 3 {
			if n, ok := args[2].(int); ok && len(args) > 3+n && args[3+n] == h.mode && h.fired.CompareAndSwap(false, true) {
				h.fn()
			}
		}
		return next(ctx, cmd)
	}
}

// The cold load (a reserve finding the counter missing) races an order: between the load's snapshots and its
// script, a held order deducts and confirms. The script no longer sees the hold but the stock it was given
// still counts its units, so it must not write (compare-and-set on the version) and load again instead.
func TestReserveLine_ColdLoadRacingADeductAndConfirm(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku = "COLD-RACE"
	mustOK(t, store.SetInventory(ctx, sku, 10, 100))
	mustOK(t, rs.SetAvailable(ctx, sku, 10))
	_, err := rs.Reserve(ctx, "racer", "", sku, 3)
	mustOK(t, err)
	mustOK(t, rs.Client().Del(ctx, rs.AvailKey(sku)).Err()) // the counter is lost

	fired := beforeRepairAvail(t, rs, "load", func() {
		mustOK(t, rcDeduct(ctx, store, "racer", sku, 3))
		_, err := rs.Confirm(ctx, "racer", sku)
		mustOK(t, err)
	})
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	acts := &activities.Activities{Redis: rs, Store: store}
	aenv.RegisterActivity(acts)
	v, err := aenv.ExecuteActivity(acts.ReserveLine, activities.LineInput{OrderID: "new", SKU: sku, Qty: 1})
	if !fired.Load() {
		t.Fatal("the interleaving did not happen: no repair_avail.lua call in load mode")
	}
	if err != nil {
		t.Fatalf("reserve after the counter was lost: %v", err)
	}
	var out ordersaga.ReserveOutcome
	mustOK(t, v.Get(&out))
	if out != ordersaga.Reserved {
		t.Errorf("reserve = %s, want reserved", out)
	}
	// db.stock 7 − the new order's hold 1 = 6.
	if avail, truth := promise(t, store, rs, sku); avail != truth || truth != 6 {
		t.Errorf("Redis %d, database %d; want 6 and 6", avail, truth)
	}
}

// Reconciliation's compare-and-set races an admin stock change: the admin change lands between
// reconciliation's snapshots and its script and happens to leave the counter at the value reconciliation
// saw. The script must still see that something changed (the version) and not write the target it computed
// from the old stock.
func TestSetStock_BetweenReconciliationSnapshotAndScript(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku = "SYNC-ABA"
	mustOK(t, store.SetInventory(ctx, sku, 12, 100))
	mustOK(t, rs.SetAvailable(ctx, sku, 10)) // drifted: the database has 12

	fired := beforeRepairAvail(t, rs, "repair", func() {
		_, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 10, PriceCents: 100}) // counter 10 again, database now 10
		mustOK(t, err)
	})
	rec := &reconcile.Reconciler{Redis: rs, Store: store}
	if _, _, err := rec.SKU(ctx, sku, sqlstore.ResyncNone); err != nil {
		t.Fatal(err)
	}
	if !fired.Load() {
		t.Fatal("the interleaving did not happen: no repair_avail.lua call in repair mode")
	}
	if avail, truth := promise(t, store, rs, sku); avail != truth {
		t.Errorf("Redis %d, database %d; want equal", avail, truth)
	}
}

// A stock past 2^53 is not exact in the scripts (a Lua number is a double): SetStock and Load refuse it and
// write nothing; at 2^53 the database and Redis hold the same number, holds included.
func TestSetStock_StockLimit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store, rs := testenv.MustOpenStore(t), testenv.MustOpenRedis(t)
	const sku, limit = "BIG", int64(1) << 53
	if limit != ordersaga.MaxStock {
		t.Fatalf("MaxStock = %d, want 2^53", ordersaga.MaxStock)
	}
	if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: limit + 1, PriceCents: 1}); !errors.Is(err, ordersaga.ErrStockOutOfRange) {
		t.Errorf("SetStock(2^53+1) = %v, want ErrStockOutOfRange", err)
	}
	if _, err := store.Inventory(ctx, sku); err == nil {
		t.Error("a refused SetStock created the SKU")
	}
	if _, _, err := rs.Load(ctx, sku, limit+1); !errors.Is(err, ordersaga.ErrStockOutOfRange) {
		t.Errorf("Load(2^53+1) = %v, want ErrStockOutOfRange", err)
	}
	if _, loaded, _ := rs.Available(ctx, sku); loaded {
		t.Error("a refused Load wrote the counter")
	}

	_, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: limit, PriceCents: 1})
	mustOK(t, err)
	_, err = rs.Reserve(ctx, "o-big", "", sku, 3)
	mustOK(t, err)
	v, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: limit, PriceCents: 1})
	mustOK(t, err)
	if v.DBStock != limit || v.RedisAvailable == nil || *v.RedisAvailable != limit-3 || v.Holds != 3 {
		t.Errorf("at the limit with a hold of 3: %+v", v)
	}
	if avail, truth := promise(t, store, rs, sku); avail != truth {
		t.Errorf("Redis %d, database %d; want equal", avail, truth)
	}
}
