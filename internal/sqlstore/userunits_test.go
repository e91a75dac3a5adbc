package sqlstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// deductAs is a one-line deduct of sku by userID.
func deductAs(userID, orderID, sku string, qty int64) ordersaga.DeductInput {
	in := deductIn(orderID, line(sku, qty))
	in.UserID = userID
	return in
}

func setLimit(t *testing.T, store *sqlstore.Store, sku string, stock, limit int64) {
	t.Helper()
	if _, err := store.SetInventoryLocked(t.Context(), sqlstore.InventorySpec{SKU: sku, Stock: stock, PriceCents: 100, PerUserLimit: limit},
		func(*sqlstore.Locked, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func wantUnits(t *testing.T, store *sqlstore.Store, sku string, want map[string]int64) {
	t.Helper()
	got, err := store.UserUnits(t.Context(), sku)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := store.LedgerUserUnits(t.Context(), sku)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(ledger) != fmt.Sprint(want) {
		t.Fatalf("units per user of %s: user_units %v, ledger %v; want %v", sku, got, ledger, want)
	}
}

// The bot: one user, 200 concurrent orders of one unit each (distinct order IDs, as distinct
// Idempotency-Keys give), on a limit of 2. The database deduct is the truth (the Redis-down path has nothing
// else): exactly 2 take stock, every other one is refused as over the limit, naming it.
func TestDeduct_PerUserLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	setLimit(t, store, "LIM", 1000, 2)
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = store.Deduct(t.Context(), deductAs("bot", fmt.Sprintf("o-bot-%03d", i), "LIM", 1))
		})
	}
	wg.Wait()
	granted := 0
	for i, err := range errs {
		le, ok := ordersaga.IsLimitExceeded(err)
		switch {
		case err == nil:
			granted++
		case ok:
			if le.SKU != "LIM" || le.Limit != 2 || le.Held != 2 {
				t.Errorf("order %d refused with %+v, want LIM, limit 2, held 2", i, le)
			}
		default:
			t.Errorf("order %d: %v, want granted or limit exceeded", i, err)
		}
	}
	if granted != 2 {
		t.Fatalf("%d of %d orders of one user granted on a limit of 2, want 2", granted, n)
	}
	checkStock(t, store, map[string]int64{"LIM": 998})
	wantUnits(t, store, "LIM", map[string]int64{"bot": 2})
	// Another user is not held back by the bot.
	if _, err := store.Deduct(t.Context(), deductAs("human", "o-human", "LIM", 2)); err != nil {
		t.Fatalf("another user's order: %v", err)
	}
}

// A cancel (the restore of the order's deduct) frees its units exactly once: the restore's retry and the
// close after it give nothing more, so the user may buy the freed units again, and no more. The anomalies
// leave the count right: a null compensation frees nothing, a hanging deduct counts nothing.
func TestRestore_FreesAUsersUnitsOnce(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	setLimit(t, store, "LIM", 100, 2)
	ctx := t.Context()
	for _, o := range []string{"o1", "o2"} {
		if _, err := store.Deduct(ctx, deductAs("u", o, "LIM", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Deduct(ctx, deductAs("u", "o3", "LIM", 1)); !isLimit(err) {
		t.Fatalf("third unit: %v, want limit exceeded", err)
	}
	for range 3 { // the restore, its duplicate, and the close that restores what still stands
		if _, err := store.Restore(ctx, "o1", []ordersaga.Line{line("LIM", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o1", Status: ordersaga.StatusCancelled, ClosedReason: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	wantUnits(t, store, "LIM", map[string]int64{"u": 1})
	if _, err := store.Deduct(ctx, deductAs("u", "o4", "LIM", 1)); err != nil {
		t.Fatalf("the freed unit: %v", err)
	}
	if _, err := store.Deduct(ctx, deductAs("u", "o5", "LIM", 1)); !isLimit(err) {
		t.Fatalf("past the limit again: %v, want limit exceeded", err)
	}
	// The refused deducts left nothing behind: their late restores are tombstones that free nothing.
	for _, o := range []string{"o3", "o5"} {
		if _, err := store.Restore(ctx, o, []ordersaga.Line{line("LIM", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	wantUnits(t, store, "LIM", map[string]int64{"u": 2})
	// Hanging: a deduct that comes after its order's tombstone is refused before it counts anything, even
	// once the user has room again.
	if _, err := store.Restore(ctx, "o4", []ordersaga.Line{line("LIM", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Restore(ctx, "o6", []ordersaga.Line{line("LIM", 1)}); err != nil { // null compensation
		t.Fatal(err)
	}
	if _, err := store.Deduct(ctx, deductAs("u", "o6", "LIM", 1)); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("deduct after its tombstone: %v, want ErrCompensated", err)
	}
	wantUnits(t, store, "LIM", map[string]int64{"u": 1})
	checkStock(t, store, map[string]int64{"LIM": 99})
	checkI4(t, store)
}

// A SKU that gets a limit while it is on sale counts what its users already hold (from the ledger); lowering
// the limit below what a user holds refuses new units and takes nothing back; removing it sells freely.
func TestPerUserLimit_SetWhileOnSale(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t)
	ctx := t.Context()
	setLimit(t, store, "LIM", 100, 0)
	for i, q := range []int64{2, 1} {
		if _, err := store.Deduct(ctx, deductAs("early", fmt.Sprintf("o-early-%d", i), "LIM", q)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Restore(ctx, "o-early-1", []ordersaga.Line{line("LIM", 1)}); err != nil {
		t.Fatal(err)
	}
	setLimit(t, store, "LIM", 97, 3)
	wantUnits(t, store, "LIM", map[string]int64{"early": 2})
	if _, err := store.Deduct(ctx, deductAs("early", "o-early-2", "LIM", 2)); !isLimit(err) {
		t.Fatalf("2 more on top of 2 with a limit of 3: %v, want limit exceeded", err)
	}
	if _, err := store.Deduct(ctx, deductAs("early", "o-early-3", "LIM", 1)); err != nil {
		t.Fatalf("1 more on top of 2 with a limit of 3: %v", err)
	}
	setLimit(t, store, "LIM", 96, 1) // lowered below what the user holds
	if _, err := store.Deduct(ctx, deductAs("early", "o-early-4", "LIM", 1)); !isLimit(err) {
		t.Fatalf("after lowering the limit: %v, want limit exceeded", err)
	}
	wantUnits(t, store, "LIM", map[string]int64{"early": 3}) // nothing taken back
	setLimit(t, store, "LIM", 96, 0)
	if _, err := store.Deduct(ctx, deductAs("early", "o-early-5", "LIM", 5)); err != nil {
		t.Fatalf("without a limit: %v", err)
	}
	if err := ordersaga.CheckPerUserLimit("LIM", -1); err == nil {
		t.Error("a negative limit accepted")
	}
	if _, err := store.SetInventoryLocked(ctx, sqlstore.InventorySpec{SKU: "LIM", Stock: 1, PerUserLimit: -1},
		func(*sqlstore.Locked, int64) error { return nil }); err == nil {
		t.Error("SetInventoryLocked accepted a negative per_user_limit")
	}
}

func isLimit(err error) bool {
	_, ok := ordersaga.IsLimitExceeded(err)
	return ok && !errors.Is(err, ordersaga.ErrCompensated)
}
