package sqlstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// setShards sets sku's stock, price and stock_shards (0: keep the SKU's) and returns the shard count the
// locked handle showed inside the transaction and the truth it read there.
func setShards(t *testing.T, store *sqlstore.Store, sku string, stock int64, shards int) (locked int, truth ordersaga.SKUTruth, err error) {
	t.Helper()
	_, err = store.SetInventoryLocked(t.Context(), sqlstore.InventorySpec{SKU: sku, Stock: stock, PriceCents: 100, StockShards: shards},
		func(l *sqlstore.Locked, _ int64) error {
			locked = l.StockShards
			var terr error
			truth, terr = l.Truth(nil)
			return terr
		})
	return locked, truth, err
}

// wantShards checks the SKU's stock_shards as every reader sees it: the row (Inventory), the locked handle
// and its truth (WithSKULocked, Locked.Truth), and ReadSKUTruth.
func wantShards(t *testing.T, store *sqlstore.Store, sku string, stock int64, shards int) {
	t.Helper()
	ctx := t.Context()
	inv, err := store.Inventory(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	if inv.StockShards != shards || inv.Stock != stock {
		t.Errorf("Inventory(%s) = %+v, want stock %d, stock_shards %d", sku, inv, stock, shards)
	}
	if err := store.WithSKULocked(ctx, sku, func(l *sqlstore.Locked) error {
		if l.StockShards != shards {
			t.Errorf("WithSKULocked(%s): StockShards %d, want %d", sku, l.StockShards, shards)
		}
		truth, err := l.Truth(nil)
		if err != nil {
			return err
		}
		if truth.Shards != shards {
			t.Errorf("Locked.Truth(%s).Shards = %d, want %d", sku, truth.Shards, shards)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	truth, err := store.ReadSKUTruth(ctx, sku, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !truth.Known || truth.Shards != shards || truth.Stock != stock {
		t.Errorf("ReadSKUTruth(%s) = %+v, want known, stock %d, Shards %d", sku, truth, stock, shards)
	}
}

// A SKU's stock_shards: set at creation, kept by a spec without it, grown, never lowered (the refusal names
// the field and both counts, and writes nothing: not the shards, not the stock asked with them).
func TestSetInventoryLocked_StockShardsOnlyGrow(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	const sku = "SHARDED"

	locked, truth, err := setShards(t, store, sku, 10, 8)
	if err != nil {
		t.Fatalf("create with 8 shards: %v", err)
	}
	if locked != 8 || truth.Shards != 8 {
		t.Errorf("create with 8 shards: locked handle %d, its truth %d; want 8", locked, truth.Shards)
	}
	wantShards(t, store, sku, 10, 8)

	locked, truth, err = setShards(t, store, sku, 20, 0)
	if err != nil {
		t.Fatalf("set without stock_shards: %v", err)
	}
	if locked != 8 || truth.Shards != 8 {
		t.Errorf("set without stock_shards: locked handle %d, its truth %d; want the SKU's 8", locked, truth.Shards)
	}
	wantShards(t, store, sku, 20, 8)
	if err := store.SetInventory(t.Context(), sku, 20, 100); err != nil { // seeding keeps them too
		t.Fatal(err)
	}
	wantShards(t, store, sku, 20, 8)

	if _, _, err := setShards(t, store, sku, 20, 8); err != nil {
		t.Fatalf("set to the same 8 shards: %v", err)
	}
	if _, _, err := setShards(t, store, sku, 30, 16); err != nil {
		t.Fatalf("grow to 16 shards: %v", err)
	}
	wantShards(t, store, sku, 30, 16)

	called := false
	touched, err := store.SetInventoryLocked(t.Context(), sqlstore.InventorySpec{SKU: sku, Stock: 5, PriceCents: 100, StockShards: 8},
		func(*sqlstore.Locked, int64) error { called = true; return nil })
	if !errors.Is(err, sqlstore.ErrShardsDecrease) {
		t.Fatalf("decrease to 8 shards: %v, want ErrShardsDecrease", err)
	}
	var de *sqlstore.ShardsDecreaseError
	if !errors.As(err, &de) || de.SKU != sku || de.Current != 16 || de.Asked != 8 {
		t.Errorf("decrease: %#v, want a ShardsDecreaseError of %s, current 16, asked 8", de, sku)
	}
	for _, s := range []string{"stock_shards", "16", "8", sku} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("decrease error %q does not name %q", err, s)
		}
	}
	if touched || called {
		t.Errorf("decrease: touched %v, fn called %v; want neither", touched, called)
	}
	wantShards(t, store, sku, 30, 16) // nothing changed, the stock asked with it neither
}

// A new SKU without stock_shards has one shard (today's layout); the bounds are 1 to ordersaga.MaxStockShards, and a
// spec outside them is refused before anything is written.
func TestSetInventoryLocked_StockShardsBounds(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	if err := store.SetInventory(t.Context(), "ONE", 3, 100); err != nil {
		t.Fatal(err)
	}
	wantShards(t, store, "ONE", 3, 1)

	if _, _, err := setShards(t, store, "MAX", 3, ordersaga.MaxStockShards); err != nil {
		t.Fatalf("create with %d shards: %v", ordersaga.MaxStockShards, err)
	}
	wantShards(t, store, "MAX", 3, ordersaga.MaxStockShards)

	for _, shards := range []int{-1, ordersaga.MaxStockShards + 1} {
		for _, sku := range []string{"ONE", "NEW"} {
			_, _, err := setShards(t, store, sku, 4, shards)
			if err == nil || errors.Is(err, sqlstore.ErrShardsDecrease) || !strings.Contains(err.Error(), "stock_shards") {
				t.Errorf("%s with %d shards: %v, want a refusal naming stock_shards", sku, shards, err)
			}
		}
	}
	wantShards(t, store, "ONE", 3, 1)
	if _, err := store.Inventory(t.Context(), "NEW"); !errors.Is(err, ordersaga.ErrNotFound) {
		t.Errorf("a refused spec created NEW: %v", err)
	}
}
