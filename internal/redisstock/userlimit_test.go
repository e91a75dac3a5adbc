package redisstock_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

func limitedSKU(t *testing.T, avail, limit int64) (*redisstock.Store, string) {
	t.Helper()
	rs, sku := testenv.MustOpenRedisSKU(t, avail)
	if err := rs.SetLimit(t.Context(), sku, limit); err != nil {
		t.Fatal(err)
	}
	return rs, sku
}

func wantUserOrders(t *testing.T, rs *redisstock.Store, sku, user string, want map[string]int64) {
	t.Helper()
	got, err := rs.UserOrders(t.Context(), sku, user)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("orders counted for %s on %s = %v, want %v", user, sku, got, want)
	}
}

// One user, 200 concurrent reserves with distinct order IDs on a limit of 2: the script holds exactly 2
// units, and every refusal says the limit and what the user holds.
func TestReserve_PerUserLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	rs, sku := limitedSKU(t, 1000, 2)
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = rs.Reserve(t.Context(), fmt.Sprintf("o-%03d", i), "bot", sku, 1) })
	}
	wg.Wait()
	granted := 0
	for i, err := range errs {
		if err == nil {
			granted++
			continue
		}
		if le, ok := ordersaga.IsLimitExceeded(err); !ok || le.Limit != 2 || le.Held != 2 || le.SKU != sku {
			t.Errorf("reserve %d: %v, want limit exceeded (limit 2, held 2)", i, err)
		}
	}
	if granted != 2 {
		t.Fatalf("%d of %d reserves of one user granted on a limit of 2, want 2", granted, n)
	}
	if avail, _, _ := rs.Available(t.Context(), sku); avail != 998 {
		t.Errorf("avail = %d, want 998", avail)
	}
	// A unit of 3 on top of nothing is refused too, and another user is not held back.
	if _, err := rs.Reserve(t.Context(), "o-big", "other", sku, 3); !isLimitErr(err) {
		t.Errorf("3 units on a limit of 2: %v, want limit exceeded", err)
	}
	if _, err := rs.Reserve(t.Context(), "o-other", "other", sku, 2); err != nil {
		t.Errorf("another user's 2 units: %v", err)
	}
}

func isLimitErr(err error) bool { _, ok := ordersaga.IsLimitExceeded(err); return ok }

// The three anomalies leave the user's count right: a duplicate reserve counts once, a release without a
// reserve (tombstone) frees nothing and makes a late reserve refuse without counting, a release frees its
// order's units once (its duplicate nothing), and a sold order's release keeps them counted.
func TestUserCount_AnomaliesLeaveItRight(t *testing.T) {
	t.Parallel()
	rs, sku := limitedSKU(t, 100, 3)
	ctx := t.Context()
	mustReserve := func(order string, qty int64, want ordersaga.ReserveOutcome) {
		t.Helper()
		out, err := rs.Reserve(ctx, order, "u", sku, qty)
		if err != nil || out != want {
			t.Fatalf("reserve %s: %v, %v; want %v", order, out, err, want)
		}
	}
	mustReserve("o1", 2, ordersaga.Reserved)
	mustReserve("o1", 2, ordersaga.Duplicate) // duplicate: counted once
	wantUserOrders(t, rs, sku, "u", map[string]int64{"o1": 2})

	// Null compensation, then the hanging reserve: nothing counted, nothing freed.
	if out, err := rs.Release(ctx, "o2", "u", sku); err != nil || out != ordersaga.TombstoneReleased {
		t.Fatalf("release before reserve: %v, %v", out, err)
	}
	if _, err := rs.Reserve(ctx, "o2", "u", sku, 1); err == nil {
		t.Fatal("a reserve after its tombstone held units")
	}
	wantUserOrders(t, rs, sku, "u", map[string]int64{"o1": 2})

	// A release frees o1's 2 units once; its duplicate frees nothing more.
	for range 2 {
		if _, err := rs.Release(ctx, "o1", "u", sku); err != nil {
			t.Fatal(err)
		}
	}
	wantUserOrders(t, rs, sku, "u", map[string]int64{})
	mustReserve("o3", 3, ordersaga.Reserved) // the whole limit again
	if _, err := rs.Reserve(ctx, "o4", "u", sku, 1); !isLimitErr(err) {
		t.Fatalf("past the limit: %v", err)
	}
	// o3 is paid: its release (the compensation of a later life) keeps the units counted.
	if _, err := rs.Confirm(ctx, "o3", sku); err != nil {
		t.Fatal(err)
	}
	if out, err := rs.ReleaseUnsold(ctx, "o3", "u", sku); err != nil || out != ordersaga.KeptSold {
		t.Fatalf("release of a sold order: %v, %v", out, err)
	}
	wantUserOrders(t, rs, sku, "u", map[string]int64{"o3": 3})
	if avail, _, _ := rs.Available(ctx, sku); avail != 97 {
		t.Errorf("avail = %d, want 97", avail)
	}
}

// Without a limit, nothing is counted per user (no key per buyer for SKUs that do not need one).
func TestReserve_NoLimitCountsNothing(t *testing.T) {
	t.Parallel()
	rs, sku := limitedSKU(t, 10, 0)
	if _, err := rs.Reserve(t.Context(), "o1", "u", sku, 5); err != nil {
		t.Fatal(err)
	}
	if n, err := rs.Client().Exists(t.Context(), rs.UserKey(sku, "u")).Result(); err != nil || n != 0 {
		t.Errorf("user key exists (%d, %v) for a SKU without a limit", n, err)
	}
}
