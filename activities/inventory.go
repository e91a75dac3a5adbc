package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
)

//go:embed lua/load.lua
var loadLua string

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

// Load sets the SKU's counter to stock − Σ holds in one script, so a reserve running at the same moment is
// counted exactly once. It returns the counter and the held units.
func (r *RedisStock) Load(ctx context.Context, sku string, stock int64) (avail, held int64, err error) {
	res, err := redis.NewScript(loadLua).Run(ctx, r.rdb, []string{r.AvailKey(sku), r.HoldsKey(sku)}, stock).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: %w", sku, err)
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("load %s: unexpected script answer %v", sku, res)
	}
	return res[0], res[1], nil
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

// SetStock sets a SKU's stock and price in the database (creating the SKU) and loads Redis to match, safe
// while orders are in flight: the Redis load runs inside the database transaction, after the inventory row is
// locked, so no deduct of the SKU commits between the two, and Redis gets stock − Σ holds (the holds are the
// reserves whose deduct is still to come). If the transaction fails after the load, Redis is loaded again from
// the stock the database kept.
func SetStock(ctx context.Context, store *Store, rs *RedisStock, sku string, stock, priceCents int64) (StockView, error) {
	if sku == "" {
		return StockView{}, errors.New("set stock: sku is empty")
	}
	if stock < 0 || priceCents < 0 {
		return StockView{}, fmt.Errorf("set stock %s: stock and price_cents must not be negative (got %d, %d)", sku, stock, priceCents)
	}
	loaded := false
	err := store.inTx(ctx, func(tx *gorm.DB) error {
		now := store.now()
		var cur []int64
		if err := tx.Raw("SELECT stock FROM inventory WHERE sku = ?"+store.forUpdate(), sku).Scan(&cur).Error; err != nil {
			return fmt.Errorf("set stock %s: lock: %w", sku, err)
		}
		if len(cur) == 0 {
			if err := tx.Exec("INSERT INTO inventory (sku, stock, price_cents, updated_at) VALUES (?, ?, ?, ?)",
				sku, stock, priceCents, now).Error; err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		} else if err := tx.Exec("UPDATE inventory SET stock = ?, price_cents = ?, updated_at = ? WHERE sku = ?",
			stock, priceCents, now, sku).Error; err != nil {
			return fmt.Errorf("set stock %s: %w", sku, err)
		}
		loaded = true
		if _, _, err := rs.Load(ctx, sku, stock); err != nil {
			return fmt.Errorf("set stock: %w", err)
		}
		return nil
	})
	if err != nil {
		if loaded {
			repairLoad(context.WithoutCancel(ctx), store, rs, sku)
		}
		return StockView{}, err
	}
	return ReadStock(ctx, store, rs, sku)
}

// repairLoad puts Redis back in line with the stock the database kept after a failed SetStock (best effort:
// reconciliation repairs what this cannot).
func repairLoad(ctx context.Context, store *Store, rs *RedisStock, sku string) {
	inv, err := store.Inventory(ctx, sku)
	switch {
	case errors.Is(err, ErrNotFound):
		_ = rs.rdb.Del(ctx, rs.AvailKey(sku)).Err()
	case err == nil:
		_, _, _ = rs.Load(ctx, sku, inv.Stock)
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
