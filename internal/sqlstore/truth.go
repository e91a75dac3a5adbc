package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

func i64(v int64) *int64 { return &v }

// inChunks runs fn over ids in slices short enough for an IN list.
func inChunks(ids []string, fn func([]string) error) error {
	const size = 500
	for start := 0; start < len(ids); start += size {
		if err := fn(ids[start:min(start+size, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// readTx runs fn in one transaction whose reads all see the same state: REPEATABLE READ on MySQL, SQLite's
// own (single-writer) transaction otherwise.
func (s *Store) readTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	var opts []*sql.TxOptions
	if s.dialect == schema.MySQL {
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	}
	return s.db.WithContext(ctx).Transaction(fn, opts...)
}

// SKUPage returns up to limit SKUs after the given one, in order.
func (s *Store) SKUPage(ctx context.Context, after string, limit int) ([]string, error) {
	var skus []string
	if err := s.db.WithContext(ctx).Raw("SELECT sku FROM inventory WHERE sku > ? ORDER BY sku LIMIT ?", after, limit).
		Scan(&skus).Error; err != nil {
		return nil, fmt.Errorf("sku page after %q: %w", after, err)
	}
	return skus, nil
}

// MaxLedgerID is the highest ledger row ID of a SKU. Auto-increment IDs are handed out in insert order, so a
// row inserted after this read has a higher ID, whenever it commits.
func (s *Store) MaxLedgerID(ctx context.Context, sku string) (int64, error) {
	return maxLedgerIDIn(s.db.WithContext(ctx), sku)
}

// maxLedgerIDIn is MaxLedgerID on a given handle (a transaction).
func maxLedgerIDIn(q *gorm.DB, sku string) (int64, error) {
	var id int64
	if err := q.Raw("SELECT COALESCE(MAX(id), 0) FROM stock_ledger WHERE sku = ?", sku).Scan(&id).Error; err != nil {
		return 0, fmt.Errorf("max ledger id %s: %w", sku, err)
	}
	return id, nil
}

type ledgerRow struct {
	ID      int64
	OrderID string
	Op      string
	Qty     int64
}

// ReadSKUTruth reads db.stock and the ledger facts that the counter's target needs, in one snapshot: the
// ledger rows of the given orders (the holds seen in Redis) and every ledger row of the SKU newer than
// watermark (orders that reserved after the Redis snapshot and deducted since).
func (s *Store) ReadSKUTruth(ctx context.Context, sku string, watermark int64, orders []string) (ordersaga.SKUTruth, error) {
	var out ordersaga.SKUTruth
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.skuTruthIn(tx, sku, watermark, orders)
		return err
	})
	if err != nil {
		return ordersaga.SKUTruth{}, fmt.Errorf("read truth %s: %w", sku, err)
	}
	return out, nil
}

// skuTruthIn is ReadSKUTruth inside a transaction of the caller's (the admin stock change reads it under the
// lock it took on the inventory row, after its own write).
func (s *Store) skuTruthIn(tx *gorm.DB, sku string, watermark int64, orders []string) (ordersaga.SKUTruth, error) {
	var out ordersaga.SKUTruth
	// The inventory row is read with a lock (MySQL): the latest committed stock, not an older snapshot, and no
	// deduct or restore of the SKU commits until this transaction ends, so the ledger reads below agree with it.
	var inv []lockedRow
	if err := tx.Raw("SELECT stock, per_user_limit, stock_shards FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&inv).Error; err != nil {
		return ordersaga.SKUTruth{}, err
	}
	if len(inv) == 0 {
		return out, nil
	}
	out.Stock, out.PerUserLimit, out.Shards, out.Known = inv[0].Stock, inv[0].PerUserLimit, inv[0].StockShards, true
	var rows []ledgerRow
	if err := tx.Raw("SELECT id, order_id, op, qty FROM stock_ledger WHERE sku = ? AND id > ?", sku, watermark).
		Scan(&rows).Error; err != nil {
		return ordersaga.SKUTruth{}, err
	}
	if err := inChunks(orders, func(chunk []string) error {
		var more []ledgerRow
		if err := tx.Raw("SELECT id, order_id, op, qty FROM stock_ledger WHERE sku = ? AND order_id IN ?", sku, chunk).
			Scan(&more).Error; err != nil {
			return err
		}
		rows = append(rows, more...)
		return nil
	}); err != nil {
		return ordersaga.SKUTruth{}, err
	}
	net := map[string]int64{}
	seen := map[int64]bool{}
	pending := map[string]bool{}
	for _, r := range rows {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		switch r.Op {
		case OpDeduct:
			net[r.OrderID] += r.Qty
		case OpRestore:
			net[r.OrderID] -= r.Qty
			if r.Qty > 0 && r.ID > watermark {
				pending[r.OrderID] = true
			}
		}
	}
	var open []string
	if err := tx.Raw(`SELECT r.order_id FROM stock_ledger r JOIN orders o ON o.order_id = r.order_id
		WHERE r.sku = ? AND r.op = ? AND r.qty > 0 AND o.status IN (?, ?)`,
		sku, OpRestore, string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment)).Scan(&open).Error; err != nil {
		return ordersaga.SKUTruth{}, err
	}
	for _, o := range open {
		pending[o] = true
	}
	if err := tx.Raw(`SELECT l.order_id, l.qty FROM orders o
		JOIN stock_ledger l ON l.order_id = o.order_id AND l.sku = ? AND l.op = ?
		WHERE o.status IN (?, ?) AND l.qty > 0 AND NOT EXISTS (
			SELECT 1 FROM stock_ledger r WHERE r.order_id = l.order_id AND r.sku = l.sku AND r.op = ?)
		ORDER BY l.order_id`,
		sku, OpDeduct, string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment), OpRestore).
		Scan(&out.Open).Error; err != nil {
		return ordersaga.SKUTruth{}, err
	}
	for o, n := range net {
		if n > 0 {
			out.Deducted = append(out.Deducted, o)
		}
	}
	for o := range pending {
		out.Pending = append(out.Pending, o)
	}
	return out, nil
}

// OrderFact is what the database knows of one order's line of one SKU.
type OrderFact struct {
	Status   ordersaga.Status // "" when the order is not recorded (no deduct yet, or never)
	Deducted int64            // DEDUCT qty of the SKU (0 if none)
	Restored bool             // a RESTORE row of the SKU exists (tombstone included)
}

// Standing reports whether the order's deduct of the SKU holds units out of db.stock.
func (f OrderFact) Standing() bool { return f.Deducted > 0 && !f.Restored }

// OrderFacts reads the status and the ledger of one SKU for the given orders.
func (s *Store) OrderFacts(ctx context.Context, sku string, orders []string) (map[string]OrderFact, error) {
	out := make(map[string]OrderFact, len(orders))
	err := inChunks(orders, func(chunk []string) error {
		var st []struct {
			OrderID string
			Status  string
		}
		db := s.db.WithContext(ctx)
		if err := db.Raw("SELECT order_id, status FROM orders WHERE order_id IN ?", chunk).Scan(&st).Error; err != nil {
			return err
		}
		for _, r := range st {
			f := out[r.OrderID]
			f.Status = ordersaga.Status(r.Status)
			out[r.OrderID] = f
		}
		var rows []ledgerRow
		if err := db.Raw("SELECT id, order_id, op, qty FROM stock_ledger WHERE sku = ? AND order_id IN ?", sku, chunk).
			Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			f := out[r.OrderID]
			if r.Op == OpDeduct {
				f.Deducted = r.Qty
			} else {
				f.Restored = true
			}
			out[r.OrderID] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("order facts %s: %w", sku, err)
	}
	return out, nil
}

// OpenOrder is an order the database still shows unpaid and open.
type OpenOrder struct {
	OrderID   string
	PayBy     *time.Time
	CreatedAt time.Time
}

// OpenOrdersBefore pages through RESERVING/AWAITING_PAYMENT orders whose payment deadline (pay_by; created_at
// for an order without one) is before the cut-off, by order ID. An order within its deadline is never
// returned: whatever Temporal says of its workflow (a Temporal restored apart from the database, or another
// namespace, knows none), it may still be paid.
func (s *Store) OpenOrdersBefore(ctx context.Context, cutoff time.Time, after string, limit int) ([]OpenOrder, error) {
	var rows []OpenOrder
	if err := s.db.WithContext(ctx).Raw(`SELECT order_id, pay_by, created_at FROM orders
		WHERE status IN (?, ?) AND COALESCE(pay_by, created_at) < ? AND order_id > ? ORDER BY order_id LIMIT ?`,
		string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment), cutoff, after, limit).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("open orders: %w", err)
	}
	return rows, nil
}
