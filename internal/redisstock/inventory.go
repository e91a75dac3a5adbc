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

// SetLimit writes the SKU's per-user limit as the database has it (0 removes it: no limit). Callers hold the
// SKU's inventory row lock (reconcile.LoadStock), so two loads cannot write an older limit last.
func (r *Store) SetLimit(ctx context.Context, sku string, limit int64) error {
	var err error
	if limit > 0 {
		err = r.rdb.Set(ctx, r.LimitKey(sku), limit, 0).Err()
	} else {
		err = r.rdb.Del(ctx, r.LimitKey(sku)).Err()
	}
	if err != nil {
		return fmt.Errorf("set per-user limit of %s: %w", sku, err)
	}
	return nil
}

// Limit reads the SKU's per-user limit as Redis has it (0: none).
func (r *Store) Limit(ctx context.Context, sku string) (int64, error) {
	n, err := r.rdb.Get(ctx, r.LimitKey(sku)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("per-user limit of %s: %w", sku, err)
	}
	return n, nil
}

// UserOrders returns the orders Redis counts against userID's units of sku (UserKey): order ID -> units.
func (r *Store) UserOrders(ctx context.Context, sku, userID string) (map[string]int64, error) {
	raw, err := r.rdb.HGetAll(ctx, r.UserKey(sku, userID)).Result()
	if err != nil {
		return nil, fmt.Errorf("units of user %s on %s: %w", userID, sku, err)
	}
	out := make(map[string]int64, len(raw))
	for order, q := range raw {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("units of user %s on %s: order %s: %w", userID, sku, order, err)
		}
		out[order] = n
	}
	return out, nil
}
