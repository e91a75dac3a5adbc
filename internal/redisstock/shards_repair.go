package redisstock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/ordersaga/ordersaga"
	"github.com/redis/go-redis/v9"
)

// SnapshotShards reads the snapshot of each of a SKU's n shards (Snapshot, one MULTI per shard, all at once).
func (r *Store) SnapshotShards(ctx context.Context, sku string, n int) ([]Snapshot, error) {
	snaps := make([]Snapshot, max(n, 1))
	err := eachShard(len(snaps), func(i int) error {
		var err error
		snaps[i], err = r.Snapshot(ctx, ShardName(sku, i))
		return err
	})
	return snaps, err
}

// HeldOrders are the orders holding units in any of the snapshots.
func HeldOrders(snaps []Snapshot) []string {
	var out []string
	for _, s := range snaps {
		for o := range s.Holds {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RepairStock is RepairAvail for a SKU whose stock is in n shards (n ≤ 1: RepairAvail on the SKU's keys), with
// a snapshot of each shard (SnapshotShards). The database's truth for the SKU is T = db.stock − what every
// shard owes (its holds whose order has no standing deduct, its pending releases: repair_avail.lua's rule);
// it is split into targets t_i with Σ t_i = T, and each shard is written by repair_avail.lua with db.stock
// given as t_i plus what that shard owes, so that the script's own arithmetic lands on t_i.
//
//   - ModeRepair (reconciliation): what each shard owes is measured first (repair_avail.lua, 'measure':
//     nothing written; raced when the shard moved since its snapshot). Nothing is written when the counters
//     add up to T and none is empty while another has two units or more; else the split is even, and the
//     shards are written by compare-and-set against their snapshots, those that go down first, and those that
//     go up only once every one that went down did (raising before lowering, or after a lowering raced,
//     would promise a unit twice for a moment: shards.pml, BUG_RAISE_BEFORE_LOWER). A shard whose target is
//     its counter is not written.
//   - ModeLoad (the cold load): only missing counters are written, with what T leaves after the counters
//     that exist (0 when they already promise T or more: reconciliation lowers them).
//   - ModeSet (the caller holds the database's lock on the SKU): every shard is set, the even split of T,
//     those that go down first.
//
// The answer sums the shards: Before is Σ counters (−1 when every counter was missing), Target is T; Code is
// Raced when any shard raced, InLine or Already when nothing was written, Loaded when every counter was
// missing, else Repaired. Only one repair of a SKU may run at a time (shards.pml: two rebalances that overlap
// over-promise); reconciliation's workflow runs one at a time, and the loads hold the database's row lock.
// The per-user limit's open-order markers (truth.Open) are not written on a split SKU: such an order's release
// finds no marker and the next run gives its units back.
func (r *Store) RepairStock(ctx context.Context, sku string, n int, mode Mode, truth ordersaga.SKUTruth, snaps []Snapshot) (AvailRepair, error) {
	if n <= 1 {
		return r.RepairAvail(ctx, sku, mode, truth, snaps[0])
	}
	if len(snaps) != n {
		return AvailRepair{}, fmt.Errorf("repair %s: %d snapshots for %d shards", sku, len(snaps), n)
	}
	shardTruth := func(stock int64) ordersaga.SKUTruth {
		return ordersaga.SKUTruth{Stock: stock, Known: true, Deducted: truth.Deducted, Pending: truth.Pending}
	}
	// What each shard owes, and its counter, as of its snapshot.
	owed, cur := make([]int64, n), make([]int64, n)
	var raced atomic.Bool
	err := eachShard(n, func(i int) error {
		res, err := r.RepairAvail(ctx, ShardName(sku, i), modeMeasure, shardTruth(0), snaps[i])
		if err != nil {
			return err
		}
		owed[i], cur[i] = -res.Target, res.Before
		if res.Code == Raced && mode != ModeSet {
			raced.Store(true)
		}
		return nil
	})
	if err != nil {
		return AvailRepair{}, err
	}
	total := truth.Stock
	before, missing := int64(0), 0
	for i := range n {
		total -= owed[i]
		if cur[i] < 0 && !snaps[i].Loaded {
			missing++
			continue
		}
		before += cur[i]
	}
	res := AvailRepair{Before: before, Target: total}
	if missing == n {
		res.Before = -1
	}
	if raced.Load() {
		res.Code = Raced
		return res, nil
	}
	targets := splitEven(total, n)
	switch mode {
	case ModeLoad:
		if missing == 0 {
			res.Code = Already
			return res, nil
		}
		targets = loadTargets(total-before, cur, snaps)
	case ModeRepair:
		if missing == 0 && before == total && !skewed(cur) {
			res.Code = InLine
			return res, nil
		}
	}
	write := func(down bool) (bool, error) {
		var lost atomic.Bool
		err := eachShard(n, func(i int) error {
			loaded := snaps[i].Loaded
			switch {
			case mode == ModeLoad && loaded, mode == ModeRepair && loaded && targets[i] == cur[i]:
				return nil
			case loaded && (targets[i] < cur[i]) != down:
				return nil
			case !loaded && down:
				return nil
			}
			w, err := r.RepairAvail(ctx, ShardName(sku, i), mode, shardTruth(targets[i]+owed[i]), snaps[i])
			if err != nil {
				return err
			}
			if w.Code == Raced || w.Code == Already {
				lost.Store(true)
			}
			return nil
		})
		return !lost.Load(), err
	}
	for _, down := range []bool{true, false} {
		ok, err := write(down)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Code = Raced
			return res, nil
		}
	}
	res.Code = Repaired
	if missing == n || mode == ModeLoad {
		res.Code = Loaded
	}
	return res, nil
}

// modeMeasure is repair_avail.lua's mode that writes nothing (RepairStock).
const modeMeasure Mode = "measure"

// splitEven is total in n parts that differ by one at most, the larger first (a negative total, which only a
// database behind its own holds can give, all on shard 0: the counters never promise it).
func splitEven(total int64, n int) []int64 {
	out := make([]int64, n)
	if total < 0 {
		out[0] = total
		return out
	}
	for i := range n {
		out[i] = total / int64(n)
		if int64(i) < total%int64(n) {
			out[i]++
		}
	}
	return out
}

// loadTargets splits left (what T leaves after the counters that exist) evenly over the missing counters;
// the counters that exist keep theirs.
func loadTargets(left int64, cur []int64, snaps []Snapshot) []int64 {
	var missing []int
	out := slices.Clone(cur)
	for i, s := range snaps {
		if !s.Loaded {
			missing = append(missing, i)
		}
	}
	parts := splitEven(max(left, 0), len(missing))
	for k, i := range missing {
		out[i] = parts[k]
	}
	return out
}

// skewed reports whether a shard is empty while another has two units or more: the walks pass empty shards,
// so the counters are split again.
func skewed(cur []int64) bool {
	lo, hi := slices.Min(cur), slices.Max(cur)
	return lo <= 0 && hi >= 2
}

// AvailAndHeldIn is AvailAndHeld summed over a SKU's n shards: avail is nil only when no shard has a counter.
func (r *Store) AvailAndHeldIn(ctx context.Context, sku string, n int) (avail *int64, held int64, err error) {
	if n <= 1 {
		return r.AvailAndHeld(ctx, sku)
	}
	avails, helds := make([]*int64, n), make([]int64, n)
	err = eachShard(n, func(i int) error {
		var err error
		avails[i], helds[i], err = r.AvailAndHeld(ctx, ShardName(sku, i))
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	for i := range n {
		held += helds[i]
		if avails[i] != nil {
			if avail == nil {
				avail = new(int64)
			}
			*avail += *avails[i]
		}
	}
	return avail, held, nil
}

// DropStock removes the counter of every shard of a SKU (as many as ShardsKey says) and its shard count:
// reserves of it then fail closed (the SKU no longer exists).
func (r *Store) DropStock(ctx context.Context, sku string) error {
	n, err := r.Shards(ctx, sku)
	if err != nil {
		return err
	}
	err = eachShard(n, func(i int) error { return r.DropAvailable(ctx, ShardName(sku, i)) })
	if err != nil {
		return err
	}
	return r.SetShards(ctx, sku, 1)
}

// OtherShardsAvailable is the sum of the counters of shards 1..n-1 of a SKU (a missing one counts 0), read
// in one pipeline (on a cluster, one round trip per master involved).
func (r *Store) OtherShardsAvailable(ctx context.Context, sku string, n int) (int64, error) {
	cmds := make([]*redis.StringCmd, 0, n)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 1; i < n; i++ {
			cmds = append(cmds, p.Get(ctx, r.AvailKey(ShardName(sku, i))))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("available of %s's shards: %w", sku, err)
	}
	var total int64
	for _, c := range cmds {
		v, err := c.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("available of %s's shards: %w", sku, err)
		}
		total += v
	}
	return total, nil
}
