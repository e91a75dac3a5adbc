package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga"
	"gorm.io/gorm"
)

// ErrShardsDecrease refuses a stock_shards below the SKU's: an order keeps the shard count it started with
// for its life, and its release must find every shard it could have touched, so a SKU's shards only grow.
// SetInventoryLocked wraps it in a *ShardsDecreaseError, which names the SKU's count and the one asked.
var ErrShardsDecrease = errors.New("stock_shards cannot decrease")

// ShardsDecreaseError is the refusal of a stock_shards below the SKU's; errors.Is(err, ErrShardsDecrease).
type ShardsDecreaseError struct {
	SKU     string
	Current int // the SKU's stock_shards
	Asked   int // the spec's, lower
}

func (e *ShardsDecreaseError) Error() string {
	return fmt.Sprintf("set stock %s: stock_shards %d asked, below the SKU's %d: %v", e.SKU, e.Asked, e.Current, ErrShardsDecrease)
}

// Unwrap is ErrShardsDecrease.
func (e *ShardsDecreaseError) Unwrap() error { return ErrShardsDecrease }

// InventoryRow is one SKU of the inventory table.
type InventoryRow struct {
	SKU          string
	Stock        int64
	PriceCents   int64
	PerUserLimit int64 // 0: none
	StockShards  int   // the Redis counters the stock is split over (1: one)
	UpdatedAt    time.Time
}

// InventorySpec is what the inventory admin sets of one SKU (PUT /v1/inventory/{sku}).
type InventorySpec struct {
	SKU          string
	Stock        int64
	PriceCents   int64
	PerUserLimit int64 // 0: none
	// StockShards is the Redis counters the stock is split over, 1 to ordersaga.MaxStockShards, never fewer than the
	// SKU has (ErrShardsDecrease); 0 keeps the SKU's (1 for a new SKU).
	StockShards int
}

// checkStockShards refuses a shard count of a spec outside 0 (keep) and 1 to ordersaga.MaxStockShards, naming the SKU.
func checkStockShards(sku string, shards int) error {
	if shards < 0 || shards > ordersaga.MaxStockShards {
		return fmt.Errorf("%s: stock_shards %d: want 1 to %d (0: keep the SKU's)", sku, shards, ordersaga.MaxStockShards)
	}
	return nil
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

// SetInventory creates or replaces a SKU's stock and price, without a per-user limit and keeping its
// stock_shards (seeding and tests; not for orders, and Redis is left alone: reconcile.SetStock sets both).
func (s *Store) SetInventory(ctx context.Context, sku string, stock, priceCents int64) error {
	_, err := s.SetInventoryLocked(ctx, InventorySpec{SKU: sku, Stock: stock, PriceCents: priceCents}, func(*Locked, int64) error { return nil })
	return err
}

// Inventory reads one SKU; ordersaga.ErrNotFound when it does not exist.
func (s *Store) Inventory(ctx context.Context, sku string) (InventoryRow, error) {
	var rows []InventoryRow
	if err := s.db.WithContext(ctx).Raw("SELECT sku, stock, price_cents, per_user_limit, stock_shards, updated_at FROM inventory WHERE sku = ?", sku).
		Scan(&rows).Error; err != nil {
		return InventoryRow{}, fmt.Errorf("inventory %s: %w", sku, err)
	}
	if len(rows) == 0 {
		return InventoryRow{}, fmt.Errorf("inventory %s: %w", sku, ordersaga.ErrNotFound)
	}
	return rows[0], nil
}

// Locked is one SKU's inventory row, locked by a transaction: no deduct or restore of the SKU commits until
// the transaction ends, so what it reads of the SKU stays the truth while the caller acts on it (the admin
// stock set and the load of Redis from the database, reconcile.LoadStock).
type Locked struct {
	s            *Store
	tx           *gorm.DB
	SKU          string
	Stock        int64 // the row's stock, as this transaction wrote or read it
	PerUserLimit int64 // the row's per-user limit (0: none), as this transaction wrote or read it
	StockShards  int   // the row's stock_shards (1: one counter), as this transaction wrote or read it
}

// Truth reads the SKU's truth as the locked transaction sees it: the watermark, then the ledger rows of the
// given orders (the holds Redis shows) and of every order that moved since.
func (l *Locked) Truth(held []string) (ordersaga.SKUTruth, error) {
	// No deduct or restore of the SKU commits while the row is locked, so the watermark finds no later rows.
	wm, err := maxLedgerIDIn(l.tx, l.SKU)
	if err != nil {
		return ordersaga.SKUTruth{}, err
	}
	truth, err := l.s.skuTruthIn(l.tx, l.SKU, wm, held)
	if err != nil {
		return ordersaga.SKUTruth{}, fmt.Errorf("truth %s: %w", l.SKU, err)
	}
	if !truth.Known {
		return ordersaga.SKUTruth{}, fmt.Errorf("truth %s: %w", l.SKU, ordersaga.ErrNotFound)
	}
	return truth, nil
}

// lockSKU locks the SKU's inventory row in tx and returns its stock, per-user limit and stock_shards (found
// false when there is no row). The lock comes before any other read: on MySQL the first plain read fixes the
// transaction's snapshot, which must not predate a deduct or restore that committed before the lock.
func (s *Store) lockSKU(tx *gorm.DB, sku string) (row lockedRow, found bool, err error) {
	var rows []lockedRow
	if err := tx.Raw("SELECT stock, per_user_limit, stock_shards FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&rows).Error; err != nil {
		return lockedRow{}, false, fmt.Errorf("lock %s: %w", sku, err)
	}
	if len(rows) == 0 {
		return lockedRow{}, false, nil
	}
	return rows[0], true, nil
}

type lockedRow struct {
	Stock        int64
	PerUserLimit int64
	StockShards  int
}

// WithSKULocked runs fn in a transaction (REPEATABLE READ on MySQL: its reads agree with each other) that holds
// the SKU's inventory row; ordersaga.ErrNotFound (wrapped)
// when the SKU does not exist, without calling fn.
func (s *Store) WithSKULocked(ctx context.Context, sku string, fn func(l *Locked) error) error {
	return s.ledgerTx(ctx, func(tx *gorm.DB) error {
		row, found, err := s.lockSKU(tx, sku)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("%s: %w", sku, ordersaga.ErrNotFound)
		}
		return fn(&Locked{s: s, tx: tx, SKU: sku, Stock: row.Stock, PerUserLimit: row.PerUserLimit, StockShards: row.StockShards})
	})
}

// SetInventoryLocked sets a SKU's stock, price, per-user limit and stock_shards (creating the SKU) and runs fn
// in the same transaction, under the row's lock, before the commit. lower is the lower of the old and the new
// stock (0 for a new SKU: nothing was for sale), what may be promised until the commit. touched reports
// whether the row was written (the transaction may still have failed after). A SKU that gets a limit (it had
// none) has its users' units counted afresh from the ledger, under the same lock (user_units, userunits.go).
// A spec's StockShards of 0 keeps the SKU's (1 for a new SKU); one below the SKU's is refused with a
// *ShardsDecreaseError (ErrShardsDecrease) before anything is written, and fn is not called.
func (s *Store) SetInventoryLocked(ctx context.Context, in InventorySpec, fn func(l *Locked, lower int64) error) (touched bool, err error) {
	sku, stock, priceCents := in.SKU, in.Stock, in.PriceCents
	if sku == "" {
		return false, errors.New("set stock: sku is empty")
	}
	if err := ordersaga.CheckStock(sku, stock); err != nil {
		return false, fmt.Errorf("set stock %w", err)
	}
	if err := ordersaga.CheckPrice(sku, priceCents); err != nil {
		return false, fmt.Errorf("set stock %w", err)
	}
	if err := ordersaga.CheckPerUserLimit(sku, in.PerUserLimit); err != nil {
		return false, fmt.Errorf("set stock %w", err)
	}
	if err := checkStockShards(sku, in.StockShards); err != nil {
		return false, fmt.Errorf("set stock %w", err)
	}
	err = s.ledgerTx(ctx, func(tx *gorm.DB) error {
		now := s.now()
		cur, found, err := s.lockSKU(tx, sku)
		if err != nil {
			return fmt.Errorf("set stock: %w", err)
		}
		lower, shards := stock, in.StockShards
		if !found {
			lower = 0
			if shards == 0 {
				shards = 1
			}
			if err := tx.Exec("INSERT INTO inventory (sku, stock, price_cents, per_user_limit, stock_shards, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
				sku, stock, priceCents, in.PerUserLimit, shards, now).Error; err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		} else {
			switch {
			case shards == 0:
				shards = cur.StockShards
			case shards < cur.StockShards:
				return &ShardsDecreaseError{SKU: sku, Current: cur.StockShards, Asked: shards}
			}
			lower = min(lower, cur.Stock)
			if err := tx.Exec("UPDATE inventory SET stock = ?, price_cents = ?, per_user_limit = ?, stock_shards = ?, updated_at = ? WHERE sku = ?",
				stock, priceCents, in.PerUserLimit, shards, now, sku).Error; err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		}
		touched = true
		if in.PerUserLimit > 0 && cur.PerUserLimit == 0 {
			if err := countUserUnits(tx, sku); err != nil {
				return fmt.Errorf("set stock %s: %w", sku, err)
			}
		}
		return fn(&Locked{s: s, tx: tx, SKU: sku, Stock: stock, PerUserLimit: in.PerUserLimit, StockShards: shards}, lower)
	})
	return touched, err
}
