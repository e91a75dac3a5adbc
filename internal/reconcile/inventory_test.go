package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

func TestLoad_SubtractsTheHoldsAndNeverClamps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := testenv.MustOpenRedisSKU(t, 100)
	for i, q := range []int64{3, 4} {
		if _, err := rs.Reserve(ctx, fmt.Sprintf("o-load-%d", i), "", sku, q); err != nil {
			t.Fatal(err)
		}
	}
	avail, held, err := rs.Load(ctx, sku, 50)
	if err != nil || avail != 43 || held != 7 {
		t.Fatalf("Load(50) = %d, %d, %v; want 43, 7", avail, held, err)
	}
	// Stock set below what is held: negative, so the releases that follow bring it back to the truth.
	if avail, _, err = rs.Load(ctx, sku, 5); err != nil || avail != -2 {
		t.Fatalf("Load(5) = %d, %v; want -2", avail, err)
	}
	if _, err := rs.Reserve(ctx, "o-load-new", "", sku, 1); err == nil {
		t.Error("a reserve succeeded on a negative counter")
	}
	if _, err := rs.Release(ctx, "o-load-0", "", sku); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Release(ctx, "o-load-1", "", sku); err != nil {
		t.Fatal(err)
	}
	if got, loaded, _ := rs.Available(ctx, sku); !loaded || got != 5 {
		t.Errorf("after the releases: %d (loaded %v), want 5", got, loaded)
	}
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := testenv.MustOpenRedisSKU(t, testenv.NotLoaded)
	avail, held, err := rs.AvailAndHeld(ctx, sku)
	if err != nil || avail != nil || held != 0 {
		t.Fatalf("not loaded: %v, %d, %v; want nil, 0", avail, held, err)
	}
	if err := rs.SetAvailable(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Reserve(ctx, "o-snap", "", sku, 4); err != nil {
		t.Fatal(err)
	}
	if avail, held, err = rs.AvailAndHeld(ctx, sku); err != nil || avail == nil || *avail != 6 || held != 4 {
		t.Fatalf("loaded: %v, %d, %v; want 6, 4", avail, held, err)
	}
}

func TestSetStock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStore(t)
	rs := testenv.MustOpenRedis(t)

	v, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: "SS-1", Stock: 10, PriceCents: 250})
	if err != nil {
		t.Fatal(err)
	}
	if v.DBStock != 10 || v.PriceCents != 250 || v.RedisAvailable == nil || *v.RedisAvailable != 10 || v.Holds != 0 || *v.Drift() != 0 {
		t.Errorf("new SKU: %+v", v)
	}
	if _, err := rs.Reserve(ctx, "o-ss", "", "SS-1", 4); err != nil {
		t.Fatal(err)
	}
	if v, err = reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: "SS-1", Stock: 30, PriceCents: 300}); err != nil {
		t.Fatal(err)
	}
	if v.DBStock != 30 || v.PriceCents != 300 || *v.RedisAvailable != 26 || v.Holds != 4 || *v.Drift() != 0 {
		t.Errorf("with a hold: %+v", v)
	}
	for _, bad := range [][2]int64{{-1, 1}, {1, -1}} {
		if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: "SS-1", Stock: bad[0], PriceCents: bad[1]}); err == nil {
			t.Errorf("SetStock(%v) succeeded", bad)
		}
	}
	if _, err := reconcile.ReadStock(ctx, store, rs, "SS-NONE"); err == nil {
		t.Error("ReadStock of an unknown SKU succeeded")
	}
	known, err := store.KnownSKUs(ctx, []string{"SS-1", "SS-NONE"})
	if err != nil || !known["SS-1"] || known["SS-NONE"] {
		t.Errorf("KnownSKUs = %v, %v", known, err)
	}
}

// TestSetStock_WhileOrdersRun: admin loads racing orders through reserve, deduct and confirm never leave
// Redis promising more than the database has (I3: avail ≤ stock − holds).
func TestSetStock_WhileOrdersRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := testenv.MustOpenStore(t)
	rs := testenv.MustOpenRedis(t)
	const sku = "SS-RACE"
	if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: 100, PriceCents: 10}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			id := fmt.Sprintf("o-race-%02d", i)
			if _, err := rs.Reserve(ctx, id, "", sku, 2); err != nil {
				return // sold out by a load: fine
			}
			_, err := store.Deduct(ctx, ordersaga.DeductInput{OrderID: id, UserID: "u", Currency: "CNY",
				PayBy: time.Now().Add(time.Hour), Lines: []ordersaga.Line{{SKU: sku, Qty: 2}}})
			if err != nil {
				if _, rerr := store.Restore(ctx, id, []ordersaga.Line{{SKU: sku, Qty: 2}}); rerr != nil {
					t.Error(rerr)
				}
				if _, rerr := rs.Release(ctx, id, "", sku); rerr != nil {
					t.Error(rerr)
				}
				return
			}
			if _, err := rs.Confirm(ctx, id, sku); err != nil {
				t.Error(err)
			}
		})
	}
	for _, stock := range []int64{80, 60, 90, 70, 75} {
		wg.Go(func() {
			if _, err := reconcile.SetStock(ctx, store, rs, sqlstore.InventorySpec{SKU: sku, Stock: stock, PriceCents: 10}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	v, err := reconcile.ReadStock(ctx, store, rs, sku)
	if err != nil {
		t.Fatal(err)
	}
	if v.RedisAvailable == nil || *v.RedisAvailable > v.DBStock-v.Holds || v.Holds != 0 {
		t.Errorf("after the race: %+v: Redis promises more than the database has, or holds are left", v)
	}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStore(t)

	// Concurrent claims of one key: one row, created once.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
	)
	for range 10 {
		wg.Go(func() {
			rec, c, err := store.ClaimIdempotencyKey(ctx, sqlstore.IdempotencyClaim{UserID: "u-1", Key: "k-1", Fingerprint: "fp-1",
				Nonce: "n-" + testenv.RandomID(8), OrderID: "o-gen0"}, time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if rec.OrderID != "o-gen0" || rec.Generation != 0 || rec.Fingerprint != "fp-1" || rec.Answered() || rec.Started {
				t.Errorf("claimed %+v", rec)
			}
			mu.Lock()
			defer mu.Unlock()
			if c {
				created++
			}
		})
	}
	wg.Wait()
	if created != 1 {
		t.Errorf("%d claims created the row, want 1", created)
	}
	// Another fingerprint does not overwrite the first.
	if rec, c, err := store.ClaimIdempotencyKey(ctx, sqlstore.IdempotencyClaim{UserID: "u-1", Key: "k-1", Fingerprint: "fp-2",
		Nonce: "n-other", OrderID: "o-other"}, time.Hour); err != nil || c || rec.Fingerprint != "fp-1" {
		t.Errorf("claim with another fingerprint: %+v %v %v", rec, c, err)
	}

	if err := store.MarkIdempotencyStarted(ctx, "u-1", "k-1", "o-gen0"); err != nil {
		t.Fatal(err)
	}
	// A rejection moves the key on once, however many requests saw it.
	for range 3 {
		if err := store.NextIdempotencyGeneration(ctx, "u-1", "k-1", "o-gen0", "o-gen1"); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := store.IdempotencyKey(ctx, "u-1", "k-1")
	if err != nil || rec.Generation != 1 || rec.OrderID != "o-gen1" || rec.Started {
		t.Fatalf("after the rejection: %+v %v", rec, err)
	}
	body := []byte("{\"order_id\":\"o-gen1\"}\n\x00\xff")
	rec, stored, err := store.KeepIdempotentAnswer(ctx, "u-1", "k-1", "o-gen1", 201, body)
	if err != nil || !stored || rec.StatusCode != 201 || string(rec.Body) != string(body) {
		t.Fatalf("keep: %+v %v %v", rec, stored, err)
	}
	// The first answer wins, and an answered key never moves on.
	if rec, stored, err = store.KeepIdempotentAnswer(ctx, "u-1", "k-1", "o-gen1", 201, []byte("other")); err != nil || stored || string(rec.Body) != string(body) {
		t.Errorf("second keep: %+v %v %v", rec, stored, err)
	}
	if err := store.NextIdempotencyGeneration(ctx, "u-1", "k-1", "o-gen1", "o-gen2"); err != nil {
		t.Fatal(err)
	}
	if rec, _ = store.IdempotencyKey(ctx, "u-1", "k-1"); rec.Generation != 1 {
		t.Errorf("an answered key moved on: %+v", rec)
	}
	if _, err := store.IdempotencyKey(ctx, "u-2", "k-1"); err == nil {
		t.Error("another user's key was found")
	}
}
