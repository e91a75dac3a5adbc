package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// StockView is one SKU as the database and Redis see it (the inventory admin endpoints' body).
type StockView struct {
	SKU        string
	DBStock    int64
	PriceCents int64
	// PerUserLimit is the units of the SKU one user may hold or buy (0: no limit).
	PerUserLimit int64
	// StockShards is the number of Redis counters the SKU's stock is split over (1: one).
	StockShards int
	// RedisAvailable is nil when the SKU is not loaded in Redis.
	RedisAvailable *int64
	// Holds is the units held in Redis and not yet confirmed by the DB deduct.
	Holds int64
	// RedisDown: Redis could not be reached; the view is the database's alone (RedisAvailable nil, Holds 0).
	RedisDown bool
}

// Drift is RedisAvailable − (DBStock − Holds): 0 when Redis and the database agree, nil when not loaded.
func (v StockView) Drift() *int64 {
	if v.RedisAvailable == nil {
		return nil
	}
	d := *v.RedisAvailable - (v.DBStock - v.Holds)
	return &d
}

// SetStock sets a SKU's stock and price in the database (creating the SKU) and loads Redis to match, safe
// while orders are in flight. Redis is set under the lock the database transaction holds on the inventory
// row, so no deduct or restore of the SKU commits in between, and from the same rule as reconciliation
// (repair_avail.lua): the stock, minus the holds whose deduct has not committed, minus the releases still to
// come for orders the database has restored. It is set twice, so that it never promises more than the
// committed stock, not even for the moment before the commit: inside the transaction from the lower of the
// old and the new stock, then again, under a fresh lock, from the stock the database kept (LoadStock). That
// second load also repairs Redis when the transaction failed.
func SetStock(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, spec sqlstore.InventorySpec) (StockView, error) {
	sku := spec.SKU
	touched, err := store.SetInventoryLocked(ctx, spec, func(l *sqlstore.Locked, lower int64) error {
		if _, err := loadLocked(ctx, l, rs, &lower); err != nil {
			return fmt.Errorf("set stock: %w", err)
		}
		return nil
	})
	if err != nil {
		if touched {
			_ = LoadStock(context.WithoutCancel(ctx), store, rs, sku) // best effort: reconciliation repairs the rest
		}
		return StockView{}, err
	}
	if err := LoadStock(ctx, store, rs, sku); err != nil {
		return StockView{}, fmt.Errorf("set stock %s: set to %d in the database, redis not raised to it yet: %w", sku, spec.Stock, err)
	}
	return ReadStock(ctx, store, rs, sku)
}

// LoadStock sets a SKU's counter from the database, under a lock on its inventory row (see SetStock); when
// the SKU does not exist, its counter is removed (fail closed).
func LoadStock(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, sku string) error {
	err := store.WithSKULocked(ctx, sku, func(l *sqlstore.Locked) error {
		_, err := loadLocked(ctx, l, rs, nil)
		return err
	})
	if errors.Is(err, ordersaga.ErrNotFound) {
		if derr := rs.DropStock(ctx, sku); derr != nil {
			return fmt.Errorf("load stock %s: %w", sku, derr)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("load stock %s: %w", sku, err)
	}
	return nil
}

// loadLocked sets the counter from the database as the locked transaction sees it (repair_avail.lua in set
// mode); stock overrides the row's stock when set. The Redis snapshot names the held orders whose ledger rows
// the truth looks up.
func loadLocked(ctx context.Context, l *sqlstore.Locked, rs *redisstock.Store, stock *int64) (redisstock.AvailRepair, error) {
	if err := rs.SetLimit(ctx, l.SKU, l.PerUserLimit); err != nil {
		return redisstock.AvailRepair{}, err
	}
	n := max(l.StockShards, 1)
	if err := syncShards(ctx, rs, l.SKU, n); err != nil {
		return redisstock.AvailRepair{}, err
	}
	snaps, err := rs.SnapshotShards(ctx, l.SKU, n)
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	truth, err := l.Truth(redisstock.HeldOrders(snaps))
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	if stock != nil {
		truth.Stock = *stock
	}
	return rs.RepairStock(ctx, l.SKU, n, redisstock.ModeSet, truth, snaps)
}

// loadAvail is the cold load: measureAndRepair in load mode, which writes the counter only if it is missing
// and Redis did not move since the snapshot, run again when Redis moved, at most maxCASAttempts times. A load
// that raced every time leaves the counter missing (fail closed) for the caller's retry.
func loadAvail(ctx context.Context, rs *redisstock.Store, store *sqlstore.Store, sku string) (redisstock.AvailRepair, error) {
	for attempt := 1; ; attempt++ {
		res, err := measureAndRepair(ctx, rs, store, sku, redisstock.ModeLoad)
		if err != nil || res.Code != redisstock.Raced || attempt == maxCASAttempts {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

// ReadStock reads a SKU from the database and Redis; ordersaga.ErrNotFound when the SKU does not exist. While
// Redis cannot be reached the view is the database's alone (RedisDown).
func ReadStock(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, sku string) (StockView, error) {
	inv, err := store.Inventory(ctx, sku)
	if err != nil {
		return StockView{}, err
	}
	v := StockView{SKU: inv.SKU, DBStock: inv.Stock, PriceCents: inv.PriceCents, PerUserLimit: inv.PerUserLimit,
		StockShards: max(inv.StockShards, 1)}
	avail, held, err := rs.AvailAndHeldIn(ctx, sku, v.StockShards)
	switch {
	case err != nil && redisstock.ConnectionFailed(err):
		v.RedisDown = true // the database's view alone: Redis's side is unknown, not 0
	case err != nil:
		return StockView{}, err
	default:
		v.RedisAvailable, v.Holds = avail, held
	}
	return v, nil
}
