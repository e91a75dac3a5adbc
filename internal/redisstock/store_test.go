package redisstock_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// redisState is everything Redis holds about one SKU and one order.
type redisState struct {
	avail  int64
	loaded bool
	holds  map[string]int64
	marker string
}

func readRedis(t *testing.T, rs *redisstock.Store, sku, orderID string) redisState {
	t.Helper()
	ctx := t.Context()
	avail, loaded, err := rs.Available(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	holds, err := rs.Holds(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	marker, err := rs.Marker(ctx, orderID, sku)
	if err != nil {
		t.Fatal(err)
	}
	return redisState{avail: avail, loaded: loaded, holds: holds, marker: marker}
}

func (s redisState) check(t *testing.T, avail int64, holds map[string]int64, marker string) {
	t.Helper()
	if !s.loaded {
		t.Errorf("avail key missing, want %d", avail)
	}
	if s.avail != avail {
		t.Errorf("avail = %d, want %d", s.avail, avail)
	}
	if !maps.Equal(s.holds, holds) && !(len(s.holds) == 0 && len(holds) == 0) {
		t.Errorf("holds = %v, want %v", s.holds, holds)
	}
	if s.marker != marker {
		t.Errorf("marker = %q, want %q", s.marker, marker)
	}
}

// checkMarkerTTL asserts the marker expires, and not before the order could still be in flight.
func checkMarkerTTL(t *testing.T, rs *redisstock.Store, sku, orderID string) {
	t.Helper()
	ttl, err := rs.Client().TTL(t.Context(), rs.MarkerKey(sku, orderID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < 6*24*time.Hour || ttl > 7*24*time.Hour {
		t.Errorf("marker TTL = %v, want about the 7-day default", ttl)
	}
}

func TestReserve_HoldsUnits(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	out, err := rs.Reserve(t.Context(), "o1", "", sku, 3)
	if err != nil || out != ordersaga.Reserved {
		t.Fatalf("Reserve = %q, %v; want reserved", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 7, map[string]int64{"o1": 3}, "H:3")
	checkMarkerTTL(t, rs, sku, "o1")
}

func TestReserve_DuplicateIsANoOp(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	if _, err := rs.Reserve(t.Context(), "o1", "", sku, 3); err != nil {
		t.Fatal(err)
	}
	// A retry, even one carrying another quantity, returns the first result and takes nothing.
	for _, qty := range []int64{3, 5} {
		out, err := rs.Reserve(t.Context(), "o1", "", sku, qty)
		if err != nil || out != ordersaga.Duplicate {
			t.Fatalf("retry with qty %d = %q, %v; want duplicate", qty, out, err)
		}
	}
	readRedis(t, rs, sku, "o1").check(t, 7, map[string]int64{"o1": 3}, "H:3")
}

func TestReserve_SoldOutHoldsNothing(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 2)
	_, err := rs.Reserve(t.Context(), "o1", "", sku, 3)
	var so *ordersaga.SoldOutError
	if !errors.As(err, &so) || so.SKU != sku {
		t.Fatalf("Reserve = %v, want SoldOutError naming %s", err, sku)
	}
	if got, ok := ordersaga.IsSoldOut(err); !ok || got != sku {
		t.Errorf("IsSoldOut = %q, %v", got, ok)
	}
	readRedis(t, rs, sku, "o1").check(t, 2, nil, "")
	// Sold out leaves no marker: the same order may try again once units come back.
	if err := rs.SetAvailable(t.Context(), sku, 5); err != nil {
		t.Fatal(err)
	}
	if out, err := rs.Reserve(t.Context(), "o1", "", sku, 3); err != nil || out != ordersaga.Reserved {
		t.Fatalf("Reserve after restock = %q, %v; want reserved", out, err)
	}
}

func TestReserve_ExactlyTheLastUnits(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 3)
	if out, err := rs.Reserve(t.Context(), "o1", "", sku, 3); err != nil || out != ordersaga.Reserved {
		t.Fatalf("Reserve = %q, %v; want reserved", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 0, map[string]int64{"o1": 3}, "H:3")
	if _, err := rs.Reserve(t.Context(), "o2", "", sku, 1); err == nil {
		t.Fatal("reserve at zero succeeded")
	}
}

func TestReserve_NotLoadedFailsClosed(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, testenv.NotLoaded)
	_, err := rs.Reserve(t.Context(), "o1", "", sku, 1)
	if !errors.Is(err, ordersaga.ErrNotLoaded) {
		t.Fatalf("Reserve = %v, want ErrNotLoaded", err)
	}
	n, err := rs.Client().Exists(t.Context(), rs.AvailKey(sku), rs.HoldsKey(sku), rs.MarkerKey(sku, "o1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d keys created by a refused reserve, want 0", n)
	}
}

func TestReserve_NonPositiveQtyIsAnError(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	for _, qty := range []int64{0, -1} {
		if out, err := rs.Reserve(t.Context(), "o1", "", sku, qty); err == nil {
			t.Errorf("Reserve qty %d = %q, nil; want an error", qty, out)
		}
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "")
}

func TestRelease_GivesUnitsBackOnce(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); err != nil {
		t.Fatal(err)
	}
	out, err := rs.Release(ctx, "o1", "", sku)
	if err != nil || out != ordersaga.Released {
		t.Fatalf("Release = %q, %v; want released", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "R:3")
	checkMarkerTTL(t, rs, sku, "o1")

	out, err = rs.Release(ctx, "o1", "", sku)
	if err != nil || out != ordersaga.AlreadyReleased {
		t.Fatalf("second Release = %q, %v; want already_released", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "R:3")

	// A reserve retried after its compensation ran must not take the units again.
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("Reserve after release = %v, want ErrCompensated", err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "R:3")
}

func TestRelease_BeforeReserveWritesTombstone(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	out, err := rs.Release(ctx, "o1", "", sku)
	if err != nil || out != ordersaga.TombstoneReleased {
		t.Fatalf("Release = %q, %v; want tombstone", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "T")
	checkMarkerTTL(t, rs, sku, "o1")

	// The hanging reserve arrives after its compensation: refused, nothing taken.
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("late Reserve = %v, want ErrCompensated", err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "T")

	out, err = rs.Release(ctx, "o1", "", sku)
	if err != nil || out != ordersaga.AlreadyReleased {
		t.Fatalf("second Release = %q, %v; want already_released", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "T")
}

func TestRelease_WithoutAvailKeyDoesNotCreateIt(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); err != nil {
		t.Fatal(err)
	}
	if err := rs.Client().Del(ctx, rs.AvailKey(sku)).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := rs.Release(ctx, "o1", "", sku); err != nil || out != ordersaga.Released {
		t.Fatalf("Release = %q, %v; want released", out, err)
	}
	st := readRedis(t, rs, sku, "o1")
	if st.loaded {
		t.Errorf("release created the avail key with %d units; a lost SKU must be reloaded from the DB", st.avail)
	}
	if len(st.holds) != 0 || st.marker != "R:3" {
		t.Errorf("holds = %v, marker = %q; want none and R:3", st.holds, st.marker)
	}
}

func TestConfirm_DropsHoldKeepsAvail(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); err != nil {
		t.Fatal(err)
	}
	ok, err := rs.Confirm(ctx, "o1", sku)
	if err != nil || !ok {
		t.Fatalf("Confirm = %v, %v; want true", ok, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 7, nil, "C:3")
	checkMarkerTTL(t, rs, sku, "o1") // KEEPTTL

	ok, err = rs.Confirm(ctx, "o1", sku)
	if err != nil || ok {
		t.Fatalf("second Confirm = %v, %v; want false, nil", ok, err)
	}
	if out, err := rs.Reserve(ctx, "o1", "", sku, 3); err != nil || out != ordersaga.Duplicate {
		t.Fatalf("Reserve after confirm = %q, %v; want duplicate", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 7, nil, "C:3")
}

func TestConfirm_WithoutHoldChangesNothing(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	// Never reserved.
	if ok, err := rs.Confirm(ctx, "o1", sku); err != nil || ok {
		t.Fatalf("Confirm of nothing = %v, %v; want false, nil", ok, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "")
	// Released before the confirm arrived.
	if _, err := rs.Reserve(ctx, "o2", "", sku, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Release(ctx, "o2", "", sku); err != nil {
		t.Fatal(err)
	}
	if ok, err := rs.Confirm(ctx, "o2", sku); err != nil || ok {
		t.Fatalf("Confirm after release = %v, %v; want false, nil", ok, err)
	}
	readRedis(t, rs, sku, "o2").check(t, 10, nil, "R:2")
}

func TestRelease_AfterConfirmGivesUnitsBack(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	if _, err := rs.Reserve(ctx, "o1", "", sku, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Confirm(ctx, "o1", sku); err != nil {
		t.Fatal(err)
	}
	// The saga restores the DB first, then releases Redis: the confirmed units come back to the counter.
	out, err := rs.Release(ctx, "o1", "", sku)
	if err != nil || out != ordersaga.Released {
		t.Fatalf("Release = %q, %v; want released", out, err)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "R:3")
	if out, _ := rs.Release(ctx, "o1", "", sku); out != ordersaga.AlreadyReleased {
		t.Fatalf("second Release = %q, want already_released", out)
	}
	readRedis(t, rs, sku, "o1").check(t, 10, nil, "R:3")
}

func TestReserve_OrdersAreIndependent(t *testing.T) {
	t.Parallel()
	rs, sku := testenv.MustOpenRedisSKU(t, 10)
	ctx := t.Context()
	for _, o := range []string{"o1", "o2", "o3"} {
		if _, err := rs.Reserve(ctx, o, "", sku, 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rs.Release(ctx, "o2", "", sku); err != nil {
		t.Fatal(err)
	}
	readRedis(t, rs, sku, "o1").check(t, 6, map[string]int64{"o1": 2, "o3": 2}, "H:2")
}

func TestKeys_ShareTheSKUHashTag(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "t0a1b2:"} {
		rs := redisstock.New(nil, prefix, 0)
		for _, sku := range []string{"SKU-1", "sku:with:colons", "A"} {
			for _, order := range []string{"o1", "order-{x}", "00000000-0000-0000-0000-000000000000"} {
				keys := []string{rs.AvailKey(sku), rs.HoldsKey(sku), rs.MarkerKey(sku, order)}
				for _, k := range keys {
					if tag := testenv.HashTag(k); tag != sku {
						t.Errorf("key %q hashes on %q, want the SKU %q", k, tag, sku)
					}
					if testenv.KeySlot(k) != testenv.KeySlot(keys[0]) {
						t.Errorf("key %q is in slot %d, %q in slot %d: one script would cross slots",
							k, testenv.KeySlot(k), keys[0], testenv.KeySlot(keys[0]))
					}
				}
			}
		}
	}
}
