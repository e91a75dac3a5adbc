package redisstock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ordersaga/ordersaga"
	"github.com/redis/go-redis/v9"
)

// Load sets the SKU's counter from a stock the caller read, to stock − Σ holds, in one script (repair_avail.lua
// in set mode, with no order known to the database), so a reserve running at the same moment is counted
// exactly once. It returns the counter and the held units. It counts every hold as not deducted yet and no
// release as still to come, which is the truth only when Redis knows no order the database has deducted
// or restored (a fresh Redis); while orders may be in flight use reconcile.LoadStock, which asks the database.
func (r *Store) Load(ctx context.Context, sku string, stock int64) (avail, held int64, err error) {
	if err := ordersaga.CheckStock(sku, stock); err != nil {
		return 0, 0, fmt.Errorf("load %w", err)
	}
	snap, err := r.Snapshot(ctx, sku)
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: %w", sku, err)
	}
	res, err := r.RepairAvail(ctx, sku, ModeSet, ordersaga.SKUTruth{Stock: stock, Known: true}, snap)
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: %w", sku, err)
	}
	return res.Target, stock - res.Target, nil
}

// AvailAndHeld reads the SKU's counter and the sum of its holds in one MULTI, so the two agree with each
// other; avail is nil when the counter is missing.
func (r *Store) AvailAndHeld(ctx context.Context, sku string) (avail *int64, held int64, err error) {
	var get *redis.StringCmd
	var vals *redis.StringSliceCmd
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, r.AvailKey(sku))
		vals = p.HVals(ctx, r.HoldsKey(sku))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	if err := commandsErr(get, vals); err != nil {
		return nil, 0, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	if n, gerr := get.Int64(); gerr == nil {
		avail = &n
	} else if !errors.Is(gerr, redis.Nil) {
		return nil, 0, fmt.Errorf("snapshot %s: avail: %w", sku, gerr)
	}
	for _, v := range vals.Val() {
		q, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil {
			return nil, 0, fmt.Errorf("snapshot %s: hold %q: %w", sku, v, perr)
		}
		held += q
	}
	return avail, held, nil
}
