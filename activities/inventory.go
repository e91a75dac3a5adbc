package activities

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
)

// StockView is one SKU as the database and Redis see it (the inventory admin endpoints' body).
type StockView struct {
	SKU        string
	DBStock    int64
	PriceCents int64
	// RedisAvailable is nil when the SKU is not loaded in Redis.
	RedisAvailable *int64
	// Holds is the units held in Redis and not yet confirmed by the DB deduct.
	Holds int64
}

// Drift is RedisAvailable − (DBStock − Holds): 0 when Redis and the database agree, nil when not loaded.
func (v StockView) Drift() *int64 {
	if v.RedisAvailable == nil {
		return nil
	}
	d := *v.RedisAvailable - (v.DBStock - v.Holds)
	return &d
}

// Load sets the SKU's counter from a stock the caller read, to stock − Σ holds, in one script (repair_avail.lua
// in set mode, with no order known to the database), so a reserve running at the same moment is counted
// exactly once. It returns the counter and the held units. It counts every hold as not deducted yet and no
// release as still to come, which is the truth only when Redis knows no order the database has deducted
// or restored (a fresh Redis); while orders may be in flight use LoadStock, which asks the database.
func (r *RedisStock) Load(ctx context.Context, sku string, stock int64) (avail, held int64, err error) {
	if err := checkStock(sku, stock); err != nil {
		return 0, 0, fmt.Errorf("load %w", err)
	}
	snap, err := r.snapshot(ctx, sku)
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: %w", sku, err)
	}
	res, err := r.repairAvail(ctx, sku, modeSet, skuTruth{stock: stock, known: true}, snap)
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: %w", sku, err)
	}
	return res.target, stock - res.target, nil
}

// Snapshot reads the SKU's counter and the sum of its holds in one MULTI, so the two agree with each other.
func (r *RedisStock) Snapshot(ctx context.Context, sku string) (avail *int64, held int64, err error) {
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

// KnownSKUs returns which of the SKUs exist in the inventory table.
func (s *Store) KnownSKUs(ctx context.Context, skus []string) (map[string]bool, error) {
	out := make(map[string]bool, len(skus))
	if len(skus) == 0 {
		return out, nil
	}
	var found []string
	if err := s.db.WithContext(ctx).Raw("SELECT sku FROM inventory WHERE sku IN ?", skus).Scan(&found).Error; err != nil {
		return nil, fmt.Errorf("known skus: %w", err)
	}
	for _, sku := range found {
		out[sku] = true
	}
	return out, nil
}

// MaxStock is the largest stock a SKU may have: 2^53, up to which every integer is exact in a Lua number (a
// double). The scripts read the stock with tonumber and write the counter from a Lua number, which Redis turns
// into the command's argument with %.17g (Redis ≤ 7.0) or, when it is an integer, exactly (7.2 on); both are
// exact up to here. Past it tonumber rounds (2^53+1 becomes 2^53, so Redis would promise a unit the database
// does not have, or the reverse), and from 1e17 Redis 7.0 writes "1e+17", which INCRBY and DECRBY refuse.
// (Lua's own tostring, %.14g, never sees a stock: no script concatenates one.)
const MaxStock int64 = 1 << 53

// ErrStockOutOfRange means a stock below 0 or above MaxStock.
var ErrStockOutOfRange = errors.New("stock out of range")

func checkStock(sku string, stock int64) error {
	if stock < 0 || stock > MaxStock {
		return fmt.Errorf("%s: stock %d: want 0 to %d: %w", sku, stock, MaxStock, ErrStockOutOfRange)
	}
	return nil
}

// SetStock sets a SKU's stock and price in the database (creating the SKU) and loads Redis to match, safe
// while orders are in flight. Redis is set under the lock the database transaction holds on the inventory
// row, so no deduct or restore of the SKU commits in between, and from the same rule as reconciliation
// (repair_avail.lua): the stock, minus the holds whose deduct has not committed, minus the releases still to
// come for orders the database has restored. It is set twice, so that it never promises more than the
// committed stock, not even for the moment before the commit: inside the transaction from the lower of the
// old and the new stock, then again, under a fresh lock, from the stock the database kept (LoadStock). That
// second load also repairs Redis when the transaction failed.
func SetStock(ctx context.Context, store *Store, rs *RedisStock, sku string, stock, priceCents int64) (StockView, error) {
	if sku == "" {
		return StockView{}, errors.New("set stock: sku is empty")
	}
	if err := checkStock(sku, stock); err != nil {
		return StockView{}, fmt.Errorf("set stock %w", err)
	}
	if priceCents < 0 {
		return StockView{}, fmt.Errorf("set stock %s: price_cents must not be negative (got %d)", sku, priceCents)
	}
	touched := false
	err := store.inTx(ctx, func(tx *gorm.DB) error {
		now := store.now()
		var cur []int64
		if err := tx.Raw("SELECT stock FROM inventory WHERE sku = ?"+store.forUpdate(), sku).Scan(&cur).Error; err != nil {
			return fmt.Errorf("set stock %s: lock: %w", sku, err)
		}
		lower := stock
		if len(cur) == 0 {
			lower = 0 // nothing was for sale: a counter left from an earlier life of the SKU must not sell
			if err := tx.Exec("INSERT INTO inventory (sku, stock, price_cents, updated_at) VALUES (?, ?, ?, ?)",
				sku, stock, priceCents, now).Error; err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		} else {
			lower = min(lower, cur[0])
			if err := tx.Exec("UPDATE inventory SET stock = ?, price_cents = ?, updated_at = ? WHERE sku = ?",
				stock, priceCents, now, sku).Error; err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		}
		touched = true
		if _, err := loadLocked(ctx, tx, store, rs, sku, &lower); err != nil {
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
		return StockView{}, fmt.Errorf("set stock %s: set to %d in the database, redis not raised to it yet: %w", sku, stock, err)
	}
	return ReadStock(ctx, store, rs, sku)
}

// LoadStock sets a SKU's counter from the database, under a lock on its inventory row (see SetStock); when
// the SKU does not exist, its counter is removed (fail closed).
func LoadStock(ctx context.Context, store *Store, rs *RedisStock, sku string) error {
	return store.inTx(ctx, func(tx *gorm.DB) error {
		_, err := loadLocked(ctx, tx, store, rs, sku, nil)
		if errors.Is(err, ErrNotFound) {
			if derr := rs.rdb.Del(ctx, rs.AvailKey(sku)).Err(); derr != nil {
				return fmt.Errorf("load stock %s: %w", sku, derr)
			}
			return nil
		}
		return err
	})
}

// loadLocked locks the SKU's inventory row in tx (if tx has not already) and sets the counter from the
// database as tx sees it (repair_avail.lua in set mode); stock overrides the row's stock when set. It returns
// ErrNotFound when the row does not exist.
func loadLocked(ctx context.Context, tx *gorm.DB, store *Store, rs *RedisStock, sku string, stock *int64) (availRepair, error) {
	// The lock comes before any other read: on MySQL the first plain read fixes the transaction's snapshot,
	// which must not predate a deduct or restore that committed before the lock.
	var row []int64
	if err := tx.Raw("SELECT stock FROM inventory WHERE sku = ?"+store.forUpdate(), sku).Scan(&row).Error; err != nil {
		return availRepair{}, fmt.Errorf("load stock %s: lock: %w", sku, err)
	}
	if len(row) == 0 {
		return availRepair{}, fmt.Errorf("load stock %s: %w", sku, ErrNotFound)
	}
	// No deduct or restore of the SKU commits while tx holds the row, so the watermark finds no later rows;
	// the Redis snapshot names the held orders whose ledger rows the truth looks up.
	wm, err := maxLedgerIDIn(tx, sku)
	if err != nil {
		return availRepair{}, err
	}
	snap, err := rs.snapshot(ctx, sku)
	if err != nil {
		return availRepair{}, err
	}
	truth, err := store.skuTruthIn(tx, sku, wm, slices.Sorted(maps.Keys(snap.holds)))
	if err != nil {
		return availRepair{}, fmt.Errorf("load stock %s: %w", sku, err)
	}
	if !truth.known {
		return availRepair{}, fmt.Errorf("load stock %s: %w", sku, ErrNotFound)
	}
	if stock != nil {
		truth.stock = *stock
	}
	return rs.repairAvail(ctx, sku, modeSet, truth, snap)
}

// loadAvail is the cold load: measureAndRepair in load mode, which writes the counter only if it is missing
// and Redis did not move since the snapshot, run again when Redis moved, at most maxCASAttempts times. A load
// that raced every time leaves the counter missing (fail closed) for the caller's retry.
func loadAvail(ctx context.Context, rs *RedisStock, store *Store, sku string) (availRepair, error) {
	for attempt := 1; ; attempt++ {
		res, err := measureAndRepair(ctx, rs, store, sku, modeLoad)
		if err != nil || res.code != codeRaced || attempt == maxCASAttempts {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

// ReadStock reads a SKU from the database and Redis; ErrNotFound when the SKU does not exist.
func ReadStock(ctx context.Context, store *Store, rs *RedisStock, sku string) (StockView, error) {
	inv, err := store.Inventory(ctx, sku)
	if err != nil {
		return StockView{}, err
	}
	avail, held, err := rs.Snapshot(ctx, sku)
	if err != nil {
		return StockView{}, err
	}
	return StockView{SKU: inv.SKU, DBStock: inv.Stock, PriceCents: inv.PriceCents, RedisAvailable: avail, Holds: held}, nil
}
