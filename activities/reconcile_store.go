package activities

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

// Anomaly is one row of stock_anomalies: what reconciliation (or the Redis-down fallback) found and did.
type Anomaly struct {
	RunID    string
	SKU      string
	OrderID  string // "" when the finding is about the SKU as a whole
	Kind     string
	Expected *int64 // the database's truth, where a number applies
	Observed *int64 // what Redis showed
	Action   string
	Detail   string
}

// AnomalyRow is an Anomaly as stored.
type AnomalyRow struct {
	ID int64
	Anomaly
	CreatedAt time.Time
}

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

// maxLedgerID is the highest ledger row ID of a SKU. Auto-increment IDs are handed out in insert order, so a
// row inserted after this read has a higher ID, whenever it commits.
func (s *Store) maxLedgerID(ctx context.Context, sku string) (int64, error) {
	return maxLedgerIDIn(s.db.WithContext(ctx), sku)
}

// maxLedgerIDIn is maxLedgerID on a given handle (a transaction).
func maxLedgerIDIn(q *gorm.DB, sku string) (int64, error) {
	var id int64
	if err := q.Raw("SELECT COALESCE(MAX(id), 0) FROM stock_ledger WHERE sku = ?", sku).Scan(&id).Error; err != nil {
		return 0, fmt.Errorf("max ledger id %s: %w", sku, err)
	}
	return id, nil
}

// skuTruth is the database's side of one SKU, read in one snapshot.
type skuTruth struct {
	stock int64
	known bool
	// deducted are the orders (among those asked about and those with ledger rows newer than the watermark)
	// whose DEDUCT of the SKU stands, i.e. is not restored: their units are out of db.stock.
	deducted []string
	// pending are orders whose RESTORE of the SKU (qty > 0) stands while their release may still be to come:
	// the order is not final yet, or the restore is newer than the watermark.
	pending []string
	// open are the orders not final yet whose DEDUCT of the SKU stands: the counter set from this truth
	// counts their units as taken, so each gets a 'C' marker if it has none (repair_avail.lua), for its
	// release to give them back.
	open []openDeduct
}

// openDeduct is an open order's standing deduct of one SKU.
type openDeduct struct {
	OrderID string
	Qty     int64
}

type ledgerRow struct {
	ID      int64
	OrderID string
	Op      string
	Qty     int64
}

// readSKUTruth reads db.stock and the ledger facts that the counter's target needs, in one snapshot: the
// ledger rows of the given orders (the holds seen in Redis) and every ledger row of the SKU newer than
// watermark (orders that reserved after the Redis snapshot and deducted since).
func (s *Store) readSKUTruth(ctx context.Context, sku string, watermark int64, orders []string) (skuTruth, error) {
	var out skuTruth
	err := s.readTx(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.skuTruthIn(tx, sku, watermark, orders)
		return err
	})
	if err != nil {
		return skuTruth{}, fmt.Errorf("read truth %s: %w", sku, err)
	}
	return out, nil
}

// skuTruthIn is readSKUTruth inside a transaction of the caller's (the admin stock change reads it under the
// lock it took on the inventory row, after its own write).
func (s *Store) skuTruthIn(tx *gorm.DB, sku string, watermark int64, orders []string) (skuTruth, error) {
	var out skuTruth
	// The inventory row is read with a lock (MySQL): the latest committed stock, not an older snapshot, and no
	// deduct or restore of the SKU commits until this transaction ends, so the ledger reads below agree with it.
	var stock []int64
	if err := tx.Raw("SELECT stock FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&stock).Error; err != nil {
		return skuTruth{}, err
	}
	if len(stock) == 0 {
		return out, nil
	}
	out.stock, out.known = stock[0], true
	var rows []ledgerRow
	if err := tx.Raw("SELECT id, order_id, op, qty FROM stock_ledger WHERE sku = ? AND id > ?", sku, watermark).
		Scan(&rows).Error; err != nil {
		return skuTruth{}, err
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
		return skuTruth{}, err
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
		return skuTruth{}, err
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
		Scan(&out.open).Error; err != nil {
		return skuTruth{}, err
	}
	for o, n := range net {
		if n > 0 {
			out.deducted = append(out.deducted, o)
		}
	}
	for o := range pending {
		out.pending = append(out.pending, o)
	}
	return out, nil
}

// orderFact is what the database knows of one order's line of one SKU.
type orderFact struct {
	status   ordersaga.Status // "" when the order is not recorded (no deduct yet, or never)
	deducted int64            // DEDUCT qty of the SKU (0 if none)
	restored bool             // a RESTORE row of the SKU exists (tombstone included)
}

// standing reports whether the order's deduct of the SKU holds units out of db.stock.
func (f orderFact) standing() bool { return f.deducted > 0 && !f.restored }

// orderFacts reads the status and the ledger of one SKU for the given orders.
func (s *Store) orderFacts(ctx context.Context, sku string, orders []string) (map[string]orderFact, error) {
	out := make(map[string]orderFact, len(orders))
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
			f.status = ordersaga.Status(r.Status)
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
				f.deducted = r.Qty
			} else {
				f.restored = true
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

// openOrder is an order the database still shows unpaid and open.
type openOrder struct {
	OrderID   string
	PayBy     *time.Time
	CreatedAt time.Time
}

// openOrdersBefore pages through RESERVING/AWAITING_PAYMENT orders created before the cut-off, by order ID.
func (s *Store) openOrdersBefore(ctx context.Context, cutoff time.Time, after string, limit int) ([]openOrder, error) {
	var rows []openOrder
	if err := s.db.WithContext(ctx).Raw(`SELECT order_id, pay_by, created_at FROM orders
		WHERE status IN (?, ?) AND created_at < ? AND order_id > ? ORDER BY order_id LIMIT ?`,
		string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment), cutoff, after, limit).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("open orders: %w", err)
	}
	return rows, nil
}

// RecordAnomalies appends rows to stock_anomalies.
func (s *Store) RecordAnomalies(ctx context.Context, rows []Anomaly) error {
	if len(rows) == 0 {
		return nil
	}
	now := s.now()
	return s.inTx(ctx, func(tx *gorm.DB) error {
		for _, a := range rows {
			if err := tx.Exec(`INSERT INTO stock_anomalies (run_id, sku, order_id, kind, expected, observed, action, detail, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				a.RunID, a.SKU, nullable(a.OrderID), a.Kind, a.Expected, a.Observed, a.Action, nullable(clip(a.Detail, anomalyDetailChars)), now).Error; err != nil {
				return fmt.Errorf("record anomaly: %w", err)
			}
		}
		return nil
	})
}

// Anomalies returns the rows of stock_anomalies, oldest first; runID "" means every run.
func (s *Store) Anomalies(ctx context.Context, runID string) ([]AnomalyRow, error) {
	var rows []struct {
		ID                 int64
		RunID, SKU         string
		OrderID            *string
		Kind, Action       string
		Expected, Observed *int64
		Detail             *string
		CreatedAt          time.Time
	}
	q := s.db.WithContext(ctx).Table("stock_anomalies").Order("id")
	if runID != "" {
		q = q.Where("run_id = ?", runID)
	}
	if err := q.Select("id, run_id, sku, order_id, kind, expected, observed, action, detail, created_at").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("anomalies: %w", err)
	}
	out := make([]AnomalyRow, len(rows))
	for i, r := range rows {
		out[i] = AnomalyRow{ID: r.ID, CreatedAt: r.CreatedAt.UTC(), Anomaly: Anomaly{
			RunID: r.RunID, SKU: r.SKU, Kind: r.Kind, Action: r.Action, Expected: r.Expected, Observed: r.Observed,
		}}
		if r.OrderID != nil {
			out[i].OrderID = *r.OrderID
		}
		if r.Detail != nil {
			out[i].Detail = *r.Detail
		}
	}
	return out, nil
}

// resyncPending returns the re-sync state of the SKUs among the given ones that the Redis-down fallback
// marked and reconciliation has not cleared since (a redis_down row newer than the last resync row):
// ResyncClear once the newest mark is ResyncSettle old (no database-only reservation can still be on its way
// to its deduct), ResyncWait before.
func (s *Store) resyncPending(ctx context.Context, skus []string) (map[string]Resync, error) {
	out := map[string]Resync{}
	settled := s.now().Add(-ResyncSettle)
	err := inChunks(skus, func(chunk []string) error {
		var rows []struct {
			SKU            string
			Marked, Synced int64
		}
		// Only the resynced row clears a mark: a repair made while the mark waits carries kind resync too.
		if err := s.db.WithContext(ctx).Raw(`SELECT sku,
				MAX(CASE WHEN kind = ? THEN id ELSE 0 END) AS marked,
				MAX(CASE WHEN kind = ? AND action = ? THEN id ELSE 0 END) AS synced
			FROM stock_anomalies WHERE sku IN ? AND kind IN (?, ?) GROUP BY sku`,
			KindRedisDown, KindResync, ActionResynced, chunk, KindRedisDown, KindResync).Scan(&rows).Error; err != nil {
			return err
		}
		var marked []string
		for _, r := range rows {
			if r.Marked > r.Synced {
				marked = append(marked, r.SKU)
				out[r.SKU] = ResyncClear
			}
		}
		if len(marked) == 0 {
			return nil
		}
		// The marks written in the last ResyncSettle: their SKUs wait.
		var recent []string
		if err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT sku FROM stock_anomalies
			WHERE sku IN ? AND kind = ? AND created_at > ?`, marked, KindRedisDown, settled).Scan(&recent).Error; err != nil {
			return err
		}
		for _, sku := range recent {
			out[sku] = ResyncWait
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resync marks: %w", err)
	}
	return out, nil
}
