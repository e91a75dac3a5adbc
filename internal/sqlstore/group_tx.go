package sqlstore

import (
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

// errFallback rolls a batch back so that its orders run one at a time.
var errFallback = errors.New("run the batch's orders one at a time")

// errBatchSoldOut rolls back a batch that found its SKU out of stock.
var errBatchSoldOut = errors.New("sold out")

// groupTx is one attempt of a batch's transaction (distinct orders of one SKU). It leaves out the orders that
// have a ledger row of the SKU already (a retry of a committed deduct, an order compensated first: the
// single-order path decides them), deducts the others and returns them with their lines, priced. It returns
// errFallback when an order would not be deducted as the others are, and errBatchSoldOut with the orders it
// ran (the ones left out are not sold out: the single-order path answers them) when the SKU has no unit left.
func (s *Store) groupTx(tx *gorm.DB, batch []*deductReq) ([]*deductReq, []ordersaga.Line, error) {
	now := s.now()
	sku := batch[0].in.Lines[0].SKU
	ids := make([]any, len(batch))
	for i, r := range batch {
		ids[i] = r.in.OrderID
	}
	known, err := s.ledgerOrders(tx, sku, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: read ledger: %w", sku, err)
	}
	if len(known) > 0 {
		skip := make(map[string]bool, len(known))
		for _, id := range known {
			skip[id] = true
		}
		var rest []*deductReq
		for _, r := range batch {
			if !skip[r.in.OrderID] {
				rest = append(rest, r)
			}
		}
		batch = rest
		if len(batch) == 0 {
			return nil, nil, nil
		}
		ids = ids[:0]
		for _, r := range batch {
			ids = append(ids, r.in.OrderID)
		}
	}
	var total int64
	for _, r := range batch {
		total += r.in.Lines[0].Qty
	}

	// The DEDUCT rows, each its own: a duplicate now (a deduct of one of these orders committed since the
	// read above) is decided by the single-order path.
	entries := make([]ledgerEntry, len(batch))
	for i, r := range batch {
		entries[i] = ledgerEntry{r.in.OrderID, sku, r.in.Lines[0].Qty}
	}
	if err := s.insertLedger(tx, OpDeduct, now, entries...); err != nil {
		if isDuplicate(err) {
			return nil, nil, errFallback
		}
		return nil, nil, fmt.Errorf("deduct batch of %s: ledger: %w", sku, err)
	}
	// A RESTORE row of an order (compensated before its deduct: the hanging anomaly) refuses that order; the
	// locking read waits for a restore committing right now, as the single-order path's does. SQLite needs no
	// second read: this transaction is its only writer since BEGIN IMMEDIATE, so the read above saw every
	// RESTORE row there is (and left those orders out).
	var restored []string
	if s.dialect == schema.MySQL {
		if err := tx.Raw("SELECT order_id FROM stock_ledger WHERE sku = ? AND op = ? AND order_id IN ("+marks(len(batch))+")"+s.forUpdate(),
			append([]any{sku, OpRestore}, ids...)...).Scan(&restored).Error; err != nil {
			return nil, nil, fmt.Errorf("deduct batch of %s: check restores: %w", sku, err)
		}
	}
	if len(restored) > 0 {
		return nil, nil, errFallback
	}
	var terms []saleTerms
	if err := tx.Raw("SELECT price_cents, per_user_limit FROM inventory WHERE sku = ?", sku).Scan(&terms).Error; err != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: price: %w", sku, err)
	}
	if len(terms) == 0 {
		return nil, nil, errFallback // each order answers UnknownSKU
	}
	price, limit := terms[0].PriceCents, terms[0].PerUserLimit

	// The orders and their lines; an order already recorded was closed before its deduct and is refused.
	lines := make([]ordersaga.Line, len(batch))
	recs := make([]ordersaga.OrderRecord, len(batch))
	for i, r := range batch {
		lines[i] = r.in.Lines[0]
		lines[i].UnitPriceCents = price
		recs[i] = ordersaga.OrderRecord{
			OrderID: r.in.OrderID, UserID: r.in.UserID, Status: ordersaga.StatusAwaitingPayment,
			Currency: r.in.Currency, PayBy: &r.in.PayBy, Lines: lines[i : i+1],
		}
	}
	if err := s.insertOrders(tx, recs, now); err != nil {
		if isDuplicate(err) {
			return nil, nil, errFallback
		}
		return nil, nil, fmt.Errorf("deduct batch of %s: orders: %w", sku, err)
	}

	// The hot row, last: its lock is held for this UPDATE, the per-user counts and the COMMIT.
	res := tx.Exec("UPDATE inventory SET stock = stock - ?, updated_at = ? WHERE sku = ? AND stock >= ? AND price_cents = ? AND per_user_limit = ?",
		total, now, sku, total, price, limit)
	if res.Error != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: update: %w", sku, res.Error)
	}
	if res.RowsAffected == 0 {
		var rows []struct {
			Stock        int64
			PriceCents   int64
			PerUserLimit int64
		}
		if err := tx.Raw("SELECT stock, price_cents, per_user_limit FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&rows).Error; err != nil {
			return nil, nil, fmt.Errorf("deduct batch of %s: stock: %w", sku, err)
		}
		if len(rows) == 1 && rows[0].Stock == 0 && rows[0].PriceCents == price && rows[0].PerUserLimit == limit {
			return batch, nil, errBatchSoldOut
		}
		return nil, nil, errFallback // not enough for all (the first to arrive get it), or repriced
	}
	if limit > 0 {
		// Each user's units of the batch together: within the limit together means within it one by one.
		var users []string
		units := map[string]int64{}
		for _, r := range batch {
			if _, ok := units[r.in.UserID]; !ok {
				users = append(users, r.in.UserID)
			}
			units[r.in.UserID] += r.in.Lines[0].Qty
		}
		for _, u := range users {
			if err := s.addUserUnits(tx, sku, u, units[u], limit); err != nil {
				var over *ordersaga.LimitExceededError
				if errors.As(err, &over) {
					return nil, nil, errFallback
				}
				return nil, nil, fmt.Errorf("deduct batch of %s: %w", sku, err)
			}
		}
	}
	return batch, lines, nil
}

// ledgerOrders is the orders among ids (strings) that have a ledger row of sku, DEDUCT or RESTORE. On SQLite
// the IDs go as one JSON array, each looked up in the ledger's unique index (order_id, sku, op): an IN list
// builds a temporary B-tree of its values (with a pager and page cache of its own) in every run of the
// statement, and the read took 10 % of the CPU of a hot SKU's group commit against 3 % this way (BENCHMARKS.md,
// "Group commit of a hot SKU's deducts"). CROSS JOIN keeps the array the outer loop (SQLite does not reorder it).
func (s *Store) ledgerOrders(tx *gorm.DB, sku string, ids []any) ([]string, error) {
	var q *gorm.DB
	if s.dialect == schema.SQLite {
		list, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		q = tx.Raw("SELECT l.order_id FROM json_each(?) j CROSS JOIN stock_ledger l ON l.order_id = j.value AND l.sku = ?", string(list), sku)
	} else {
		q = tx.Raw("SELECT order_id FROM stock_ledger WHERE sku = ? AND order_id IN ("+marks(len(ids))+")", append([]any{sku}, ids...)...)
	}
	var known []string
	if err := q.Scan(&known).Error; err != nil {
		return nil, err
	}
	return known, nil
}
