package redisstock_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// splitSKU opens a SKU whose stock is in len(avail) shards with these counters.
func splitSKU(t *testing.T, avail ...int64) (*redisstock.Store, string) {
	t.Helper()
	rs, sku := testenv.MustOpenRedisSKU(t, avail[0])
	for i, v := range avail {
		if err := rs.SetAvailable(t.Context(), redisstock.ShardName(sku, i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.SetShards(t.Context(), sku, len(avail)); err != nil {
		t.Fatal(err)
	}
	return rs, sku
}

// orderFrom is an order ID whose walk over n shards starts at shard start.
func orderFrom(t *testing.T, tag string, n, start int) string {
	t.Helper()
	for k := range 10000 {
		id := fmt.Sprintf("%s-%d", tag, k)
		if redisstock.WalkStart(id, n) == start {
			return id
		}
	}
	t.Fatalf("no order ID starts at shard %d of %d", start, n)
	return ""
}

// shardsState is each shard's counter, holds and the order's marker.
func shardsState(t *testing.T, rs *redisstock.Store, sku, order string, n int) (avail []int64, holds []map[string]int64, markers []string) {
	t.Helper()
	for i := range n {
		s := readRedis(t, rs, redisstock.ShardName(sku, i), order)
		avail, holds, markers = append(avail, s.avail), append(holds, s.holds), append(markers, s.marker)
	}
	return avail, holds, markers
}

func TestShards_AWalkFindsTheLastUnitWhereverItIs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 0, 0, 0, 1)
	o := orderFrom(t, "walk", 4, 1) // walks 1, 2, 3: held on 3
	out, err := rs.ReserveIn(ctx, 4, o, "u1", sku, 1)
	if err != nil || out != ordersaga.Reserved {
		t.Fatalf("ReserveIn = %q, %v; want reserved (shard 3 has a unit)", out, err)
	}
	avail, holds, markers := shardsState(t, rs, sku, o, 4)
	if !slices.Equal(avail, []int64{0, 0, 0, 0}) || holds[3][o] != 1 {
		t.Errorf("avail %v holds %v, want every shard 0 and the hold on shard 3", avail, holds)
	}
	if want := []string{"", "P", "P", "H:1"}; !slices.Equal(markers, want) {
		t.Errorf("markers %q, want %q (shard 0 never reached, 1 and 2 passed)", markers, want)
	}
	// Nothing left anywhere: the next order's walk passes every shard and is told sold out.
	o2 := orderFrom(t, "walk2", 4, 2)
	_, err = rs.ReserveIn(ctx, 4, o2, "u2", sku, 1)
	if _, ok := ordersaga.IsSoldOut(err); !ok {
		t.Fatalf("ReserveIn with every shard empty = %v, want sold out", err)
	}
	if _, _, m := shardsState(t, rs, sku, o2, 4); !slices.Equal(m, []string{"P", "P", "P", "P"}) {
		t.Errorf("sold-out walk's markers %q, want P on every shard", m)
	}
}

// A retry (or an attempt landing late) must answer as the walk did: it never holds on a shard an attempt of
// the order passed, even when that shard has units again (a rebalance or a release put them there).
func TestShards_ARetryNeverHoldsOnAShardItsOrderPassed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 0, 2)
	o := orderFrom(t, "retry", 2, 0)
	if out, err := rs.ReserveIn(ctx, 2, o, "", sku, 1); err != nil || out != ordersaga.Reserved {
		t.Fatalf("first attempt = %q, %v", out, err)
	}
	if err := rs.SetAvailable(ctx, redisstock.ShardName(sku, 0), 5); err != nil { // units back on shard 0
		t.Fatal(err)
	}
	out, err := rs.ReserveIn(ctx, 2, o, "", sku, 1)
	if err != nil || out != ordersaga.Duplicate {
		t.Fatalf("retry = %q, %v; want duplicate (held on shard 1)", out, err)
	}
	avail, holds, _ := shardsState(t, rs, sku, o, 2)
	if !slices.Equal(avail, []int64{5, 1}) || len(holds[0]) != 0 {
		t.Errorf("after the retry: avail %v holds %v; the retry took a second unit", avail, holds)
	}
	// A sold-out answer is kept too: every shard passed stays passed.
	rs2, sku2 := splitSKU(t, 0, 0)
	o2 := orderFrom(t, "soldretry", 2, 1)
	if _, err := rs2.ReserveIn(ctx, 2, o2, "", sku2, 1); err == nil {
		t.Fatal("reserve with both shards empty succeeded")
	}
	_ = rs2.SetAvailable(ctx, redisstock.ShardName(sku2, 1), 3)
	if _, err := rs2.ReserveIn(ctx, 2, o2, "", sku2, 1); err == nil {
		t.Fatal("a retry of a sold-out walk held a unit: its first attempt's answer was sold out")
	}
}

func TestShards_ReleaseAndConfirmFollowTheWalk(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 0, 0, 3)
	o := orderFrom(t, "rel", 3, 0)
	if _, err := rs.ReserveIn(ctx, 3, o, "", sku, 2); err != nil {
		t.Fatal(err)
	}
	out, err := rs.ReleaseIn(ctx, 3, o, "", sku)
	if err != nil || out != ordersaga.Released {
		t.Fatalf("ReleaseIn = %q, %v; want released", out, err)
	}
	avail, holds, markers := shardsState(t, rs, sku, o, 3)
	if !slices.Equal(avail, []int64{0, 0, 3}) || len(holds[2]) != 0 {
		t.Errorf("avail %v holds %v: the units were not given back to shard 2", avail, holds)
	}
	if want := []string{"X", "X", "R:2"}; !slices.Equal(markers, want) {
		t.Errorf("markers %q, want %q", markers, want)
	}
	// A reserve attempt landing after the release is refused on the first shard, holding nothing.
	if _, err := rs.ReserveIn(ctx, 3, o, "", sku, 2); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Errorf("late reserve after the release = %v, want refused (compensated)", err)
	}
	if again, err := rs.ReleaseIn(ctx, 3, o, "", sku); err != nil || again != ordersaga.AlreadyReleased {
		t.Errorf("second release = %q, %v; want already released", again, err)
	}

	// Confirm: the hold two shards along the walk is confirmed.
	o2 := orderFrom(t, "conf", 3, 1) // walks 1 (empty: P), 2 (holds)
	if _, err := rs.ReserveIn(ctx, 3, o2, "", sku, 1); err != nil {
		t.Fatal(err)
	}
	if ok, err := rs.ConfirmIn(ctx, 3, o2, sku); err != nil || !ok {
		t.Fatalf("ConfirmIn = %v, %v; want confirmed", ok, err)
	}
	if _, holds, markers := shardsState(t, rs, sku, o2, 3); markers[2] != "C:1" || len(holds[2]) != 0 {
		t.Errorf("after confirm: markers %q holds %v, want C:1 on shard 2 and no hold", markers, holds)
	}
	// A sold release of a confirmed order keeps its units; a plain one gives them back once.
	if out, err := rs.ReleaseUnsoldIn(ctx, 3, o2, "", sku); err != nil || out != ordersaga.KeptSold {
		t.Errorf("ReleaseUnsoldIn = %q, %v; want kept", out, err)
	}
}

// A release that stopped half-way (its activity timed out after turning the first shard's 'P' into 'X') is
// retried from the walk's start: the 'X' must not stop the retry short of the hold further on.
func TestShards_AReleaseRetriedAfterStoppingHalfWayFindsTheHold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 0, 1)
	o := orderFrom(t, "half", 2, 0)
	if _, err := rs.ReserveIn(ctx, 2, o, "", sku, 1); err != nil {
		t.Fatal(err)
	}
	// The first release attempt's first step, alone: shard 0's 'P' becomes 'X'.
	if err := rs.Client().Set(ctx, rs.MarkerKey(sku, o), "X", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := rs.ReleaseIn(ctx, 2, o, "", sku); err != nil || out != ordersaga.Released {
		t.Fatalf("retried release = %q, %v; want released", out, err)
	}
	if avail, _, _ := shardsState(t, rs, sku, o, 2); !slices.Equal(avail, []int64{0, 1}) {
		t.Errorf("avail %v, want the unit back on shard 1", avail)
	}
}

// A release before any reserve writes a tombstone where the walk starts, and a reserve that lands after it is
// refused there: it holds on no shard.
func TestShards_AReleaseBeforeTheReserveRefusesIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 4, 4, 4)
	o := orderFrom(t, "early", 3, 2)
	if out, err := rs.ReleaseIn(ctx, 3, o, "", sku); err != nil || out != ordersaga.TombstoneReleased {
		t.Fatalf("early release = %q, %v; want a tombstone", out, err)
	}
	if _, err := rs.ReserveIn(ctx, 3, o, "", sku, 1); !errors.Is(err, ordersaga.ErrCompensated) {
		t.Fatalf("reserve after the release = %v, want refused", err)
	}
	if avail, _, _ := shardsState(t, rs, sku, o, 3); !slices.Equal(avail, []int64{4, 4, 4}) {
		t.Errorf("avail %v, want nothing taken", avail)
	}
}

// The leak pass releases on every shard: it finds the hold whatever the order's own shard count was.
func TestShards_ReleaseEveryShardFindsAHoldOfASmallerWalk(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 0, 1, 0, 0)
	o := orderFrom(t, "leak", 2, 0) // placed when the SKU had 2 shards
	if _, err := rs.ReserveIn(ctx, 2, o, "", sku, 1); err != nil {
		t.Fatal(err)
	}
	out, err := rs.ReleaseEveryShard(ctx, 4, o, sku, false)
	if err != nil || out != ordersaga.Released {
		t.Fatalf("ReleaseEveryShard = %q, %v; want released", out, err)
	}
	if avail, holds, _ := shardsState(t, rs, sku, o, 4); !slices.Equal(avail, []int64{0, 1, 0, 0}) || len(holds[1]) != 0 {
		t.Errorf("avail %v holds %v, want the unit back on shard 1", avail, holds)
	}
}

// The order of the writes (lowerings before raisings) is the model's to check (shards.pml,
// BUG_RAISE_BEFORE_LOWER); this test checks what the writes leave.
func TestShards_RepairSplitsTheTruthEvenly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 9, 0, 0, 0)
	// An order holds 1 on shard 0 with no deduct yet: the truth for the counters is 10 − 1 = 9 (in line),
	// but shard 0 has everything: skewed, so split again.
	o := orderFrom(t, "hold", 4, 0)
	if err := rs.SetAvailable(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ReserveIn(ctx, 4, o, "", sku, 1); err != nil {
		t.Fatal(err)
	}
	snaps, err := rs.SnapshotShards(ctx, sku, 4)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rs.RepairStock(ctx, sku, 4, redisstock.ModeRepair, ordersaga.SKUTruth{Stock: 10, Known: true}, snaps)
	if err != nil || res.Code != redisstock.Repaired || res.Before != 9 || res.Target != 9 {
		t.Fatalf("RepairStock = %+v, %v; want repaired, 9 -> 9", res, err)
	}
	avail, holds, _ := shardsState(t, rs, sku, o, 4)
	if !slices.Equal(avail, []int64{3, 2, 2, 2}) || holds[0][o] != 1 {
		t.Errorf("avail %v holds %v, want 3,2,2,2 and the hold kept", avail, holds)
	}
	// In line and even: nothing written.
	snaps, _ = rs.SnapshotShards(ctx, sku, 4)
	if res, err := rs.RepairStock(ctx, sku, 4, redisstock.ModeRepair, ordersaga.SKUTruth{Stock: 10, Known: true}, snaps); err != nil || res.Code != redisstock.InLine {
		t.Errorf("second RepairStock = %+v, %v; want in line", res, err)
	}
	// A drift (Redis one short) is given back once, split.
	_ = rs.SetAvailable(ctx, redisstock.ShardName(sku, 3), 1)
	snaps, _ = rs.SnapshotShards(ctx, sku, 4)
	if res, err := rs.RepairStock(ctx, sku, 4, redisstock.ModeRepair, ordersaga.SKUTruth{Stock: 10, Known: true}, snaps); err != nil || res.Code != redisstock.Repaired || res.Before != 8 {
		t.Errorf("RepairStock of a drift = %+v, %v; want repaired from 8", res, err)
	}
	if avail, _, _ := shardsState(t, rs, sku, o, 4); sum(avail) != 9 {
		t.Errorf("avail %v, want 9 in all", avail)
	}
}

// A shard that moves between the snapshot and the repair makes the whole repair stand down: no shard is
// raised from a truth another shard's move made stale.
func TestShards_RepairStandsDownWhenAShardMoved(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 8, 0)
	snaps, err := rs.SnapshotShards(ctx, sku, 2)
	if err != nil {
		t.Fatal(err)
	}
	o := orderFrom(t, "mover", 2, 0)
	if _, err := rs.ReserveIn(ctx, 2, o, "", sku, 1); err != nil { // moves shard 0 after the snapshot
		t.Fatal(err)
	}
	res, err := rs.RepairStock(ctx, sku, 2, redisstock.ModeRepair, ordersaga.SKUTruth{Stock: 8, Known: true}, snaps)
	if err != nil || res.Code != redisstock.Raced {
		t.Fatalf("RepairStock = %+v, %v; want raced", res, err)
	}
	if avail, _, _ := shardsState(t, rs, sku, o, 2); !slices.Equal(avail, []int64{7, 0}) {
		t.Errorf("avail %v, want untouched 7,0", avail)
	}
}

// Loads: a missing shard is loaded with what the truth leaves after the others; set mode splits it all.
func TestShards_LoadAndSet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, sku := splitSKU(t, 3, 3, 3)
	if err := rs.DropAvailable(ctx, redisstock.ShardName(sku, 1)); err != nil { // one master lost its data
		t.Fatal(err)
	}
	snaps, _ := rs.SnapshotShards(ctx, sku, 3)
	res, err := rs.RepairStock(ctx, sku, 3, redisstock.ModeLoad, ordersaga.SKUTruth{Stock: 10, Known: true}, snaps)
	if err != nil || res.Code != redisstock.Loaded {
		t.Fatalf("load = %+v, %v; want loaded", res, err)
	}
	if avail, _, _ := shardsState(t, rs, sku, "none", 3); !slices.Equal(avail, []int64{3, 4, 3}) {
		t.Errorf("avail %v, want 3,4,3 (the missing shard gets what the truth leaves)", avail)
	}
	snaps, _ = rs.SnapshotShards(ctx, sku, 3)
	if res, err := rs.RepairStock(ctx, sku, 3, redisstock.ModeSet, ordersaga.SKUTruth{Stock: 7, Known: true}, snaps); err != nil || res.Target != 7 {
		t.Fatalf("set = %+v, %v", res, err)
	}
	if avail, _, _ := shardsState(t, rs, sku, "none", 3); !slices.Equal(avail, []int64{3, 2, 2}) {
		t.Errorf("avail %v, want 3,2,2", avail)
	}
	total, held, err := rs.AvailAndHeldIn(ctx, sku, 3)
	if err != nil || total == nil || *total != 7 || held != 0 {
		t.Errorf("AvailAndHeldIn = %v, %d, %v; want 7, 0", total, held, err)
	}
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}
