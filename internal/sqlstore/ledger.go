package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
)

// Ledger operations.
const (
	OpDeduct  = "DEDUCT"
	OpRestore = "RESTORE"
)

var errAlreadyDeducted = errors.New("already deducted")

func sortedLines(lines []ordersaga.Line) []ordersaga.Line {
	out := append([]ordersaga.Line(nil), lines...)
	sort.Slice(out, func(i, j int) bool { return out[i].SKU < out[j].SKU })
	return out
}

// Deduct takes the units of every line from db.stock in one transaction: per line the DEDUCT ledger row
// first (UNIQUE (order_id, sku, op): a duplicate means an earlier attempt committed), then a refusal if a
// RESTORE already exists for the line (the hanging anomaly), then the line's price; then the order record;
// and last the conditional UPDATE of every line's inventory row (0 rows = sold out, and the whole
// transaction rolls back). The hot rows come last so each is locked only for the UPDATEs and the COMMIT,
// not for the statements that touch this order's rows only (BENCHMARKS.md: about 1.5x the deducts per
// second on one hot SKU on MariaDB). The UPDATE also checks the price read earlier, so an order never
// records a price the SKU no longer had when its stock was taken (a reprice in between retries).
//
// The single-line deducts of one SKU that arrive together commit together (group.go): same outcome for each
// order, one transaction for many.
func (s *Store) Deduct(ctx context.Context, in ordersaga.DeductInput) (ordersaga.DeductResult, error) {
	if err := ordersaga.CheckStored("deduct", in.OrderID, in.Lines); err != nil {
		return ordersaga.DeductResult{}, err
	}
	if s.group != nil && len(in.Lines) == 1 {
		return s.group.deduct(ctx, in)
	}
	return s.deductOne(ctx, in)
}

// deductOne is Deduct in a transaction of its own.
func (s *Store) deductOne(ctx context.Context, in ordersaga.DeductInput) (ordersaga.DeductResult, error) {
	lines := sortedLines(in.Lines) // one lock order for every transaction: no deadlock between two orders
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.ledgerTx(ctx, func(tx *gorm.DB) error { return s.deductTx(tx, in, lines) })
		if !errors.Is(err, errRepriced) {
			break
		}
	}
	if errors.Is(err, errAlreadyDeducted) {
		rec, rerr := s.Order(ctx, in.OrderID)
		if rerr != nil {
			return ordersaga.DeductResult{}, fmt.Errorf("deduct %s: read committed order: %w", in.OrderID, rerr)
		}
		return ordersaga.DeductResult{Lines: rec.Lines, AmountCents: rec.AmountCents, AlreadyDone: true}, nil
	}
	if err != nil {
		return ordersaga.DeductResult{}, err
	}
	amount, err := ordersaga.Amount(lines) // checked by insertOrder in the transaction
	return ordersaga.DeductResult{Lines: lines, AmountCents: amount}, err
}

// errRepriced means a line's price changed between the transaction's read and its UPDATE: run it again.
var errRepriced = errors.New("price changed during the deduct")

// deductTx is one attempt of Deduct; it fills in lines' prices.
func (s *Store) deductTx(tx *gorm.DB, in ordersaga.DeductInput, lines []ordersaga.Line) error {
	now := s.now()
	limits := make([]int64, len(lines)) // per line, the SKU's per-user limit as read with its price
	for i, l := range lines {
		if err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{in.OrderID, l.SKU, l.Qty}); err != nil {
			if isDuplicate(err) {
				return s.deductAgain(tx, in.OrderID)
			}
			return fmt.Errorf("deduct %s: ledger %s: %w", in.OrderID, l.SKU, err)
		}
		var restores int64
		if err := tx.Raw("SELECT COUNT(*) FROM stock_ledger WHERE order_id = ? AND sku = ? AND op = ?"+s.forUpdate(),
			in.OrderID, l.SKU, OpRestore).Scan(&restores).Error; err != nil {
			return fmt.Errorf("deduct %s: check restore %s: %w", in.OrderID, l.SKU, err)
		}
		if restores > 0 {
			return fmt.Errorf("deduct %s line %s: %w", in.OrderID, l.SKU, ordersaga.ErrCompensated)
		}
		var terms []saleTerms
		if err := tx.Raw("SELECT price_cents, per_user_limit FROM inventory WHERE sku = ?", l.SKU).Scan(&terms).Error; err != nil {
			return fmt.Errorf("deduct %s: price %s: %w", in.OrderID, l.SKU, err)
		}
		if len(terms) == 0 {
			return fmt.Errorf("deduct %s: %w", in.OrderID, &ordersaga.UnknownSKUError{SKU: l.SKU})
		}
		lines[i].UnitPriceCents = terms[0].PriceCents
		limits[i] = terms[0].PerUserLimit
	}
	rec := ordersaga.OrderRecord{
		OrderID: in.OrderID, UserID: in.UserID, Status: ordersaga.StatusAwaitingPayment,
		Currency: in.Currency, PayBy: &in.PayBy, Lines: lines,
	}
	if err := s.insertOrder(tx, rec, now); err != nil {
		if isDuplicate(err) {
			// The order was closed (rejected) before this deduct ran: it must not take stock.
			return fmt.Errorf("deduct %s: order already recorded: %w", in.OrderID, ordersaga.ErrCompensated)
		}
		return fmt.Errorf("deduct %s: %w", in.OrderID, err)
	}
	for i, l := range lines {
		res := tx.Exec("UPDATE inventory SET stock = stock - ?, updated_at = ? WHERE sku = ? AND stock >= ? AND price_cents = ? AND per_user_limit = ?",
			l.Qty, now, l.SKU, l.Qty, l.UnitPriceCents, limits[i])
		if res.Error != nil {
			return fmt.Errorf("deduct %s: update %s: %w", in.OrderID, l.SKU, res.Error)
		}
		if res.RowsAffected > 0 {
			// The row is locked now, with the limit read above: the user's units of the SKU are counted under
			// the lock every deduct and restore of the SKU takes.
			if limits[i] > 0 {
				if err := s.addUserUnits(tx, l.SKU, in.UserID, l.Qty, limits[i]); err != nil {
					return fmt.Errorf("deduct %s: %w", in.OrderID, err)
				}
			}
			continue
		}
		// Sold out, or repriced (or its limit changed) since the read: a locking read sees the latest committed
		// row (a plain one would see this transaction's snapshot on InnoDB).
		var terms []saleTerms
		if err := tx.Raw("SELECT price_cents, per_user_limit FROM inventory WHERE sku = ?"+s.forUpdate(), l.SKU).Scan(&terms).Error; err != nil {
			return fmt.Errorf("deduct %s: price %s: %w", in.OrderID, l.SKU, err)
		}
		if len(terms) > 0 && (terms[0].PriceCents != l.UnitPriceCents || terms[0].PerUserLimit != limits[i]) {
			return errRepriced
		}
		return &ordersaga.SoldOutError{SKU: l.SKU}
	}
	return nil
}

// saleTerms is what a deduct reads of a SKU before it takes the units: the price and the per-user limit.
type saleTerms struct {
	PriceCents   int64
	PerUserLimit int64
}

// ledgerEntry is one stock_ledger row to write.
type ledgerEntry struct {
	OrderID, SKU string
	Qty          int64
}

// insertLedger writes ledger rows of one op in one INSERT; a row that exists (UNIQUE (order_id, sku, op))
// fails it (isDuplicate), and with several rows on SQLite the whole transaction (insertRows).
func (s *Store) insertLedger(tx *gorm.DB, op string, now time.Time, rows ...ledgerEntry) error {
	return s.insertRows(tx, "stock_ledger", []string{"order_id", "sku", "op", "qty", "created_at"}, len(rows), func(i int, args []any) []any {
		return append(args, rows[i].OrderID, rows[i].SKU, op, rows[i].Qty, now)
	})
}

// deductAgain decides a deduct whose DEDUCT row already exists, under the order's row lock: the retry of a
// deduct that committed (the order awaits its payment, nothing restored) answers AlreadyDone; any other
// state refuses it. An order ID that lives a second time (Temporal forgot its first run) must never take
// the first life's deduct as its own: its compensation would give back units the first life sold.
func (s *Store) deductAgain(tx *gorm.DB, orderID string) error {
	st, found, err := s.lockOrder(tx, orderID)
	if err != nil {
		return fmt.Errorf("deduct %s: %w", orderID, err)
	}
	if !found {
		return fmt.Errorf("deduct %s: the order is not recorded: %w", orderID, ordersaga.ErrCompensated)
	}
	if st.Status != ordersaga.StatusAwaitingPayment {
		return fmt.Errorf("deduct %s: the order is %s: %w", orderID, st.Status, ordersaga.ErrCompensated)
	}
	restored, err := hasRestore(tx, orderID)
	if err != nil {
		return fmt.Errorf("deduct %s: %w", orderID, err)
	}
	if restored {
		return fmt.Errorf("deduct %s: the order is restored: %w", orderID, ordersaga.ErrCompensated)
	}
	return errAlreadyDeducted
}

// Restore gives back what Deduct took, for every line in one transaction, once. A PAID order gives nothing
// back (every line answers Sold): the order's row lock orders it against MarkPaid, which refuses once a
// RESTORE exists, so an order is either paid with its units sold or restored, never both. Per line it reads
// the DEDUCT row with a locking read (so a deduct committing right now is seen), then inserts the RESTORE
// row — with the deducted qty, or 0 as a tombstone when nothing was deducted, which makes a late deduct
// refuse.
func (s *Store) Restore(ctx context.Context, orderID string, lines []ordersaga.Line) ([]ordersaga.RestoreLine, error) {
	if err := ordersaga.CheckStored("restore", orderID, lines); err != nil {
		return nil, err
	}
	var out []ordersaga.RestoreLine
	err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.restoreTx(tx, orderID, lines)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// restoreTx is Restore inside the caller's transaction.
func (s *Store) restoreTx(tx *gorm.DB, orderID string, lines []ordersaga.Line) ([]ordersaga.RestoreLine, error) {
	sorted := sortedLines(lines)
	out := make([]ordersaga.RestoreLine, 0, len(sorted))
	// The order's row lock comes first, also when the row does not exist yet: then the locking read holds the
	// gap where it would go, so a deduct of the order (which inserts the row) waits for this transaction, or
	// this one for it, and a payment can only follow that deduct. Deciding from a plain read of the row and
	// locking only when it was there left a window: a deduct and a payment committing between that read and
	// the locking read of the DEDUCT rows below, which sees them, and the units of a PAID order went back.
	// The price is a gap lock on the orders index while a never-deducted order is restored, which holds up
	// an insert of another order into that gap for as long (a rare path: compensations run after a deduct).
	st, _, err := s.lockOrder(tx, orderID)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", orderID, err)
	}
	if st.Status == ordersaga.StatusPaid {
		for _, l := range sorted {
			out = append(out, ordersaga.RestoreLine{SKU: l.SKU, Sold: true})
		}
		return out, nil
	}
	now := s.now()
	for _, l := range sorted {
		var deducted []int64
		if err := tx.Raw("SELECT qty FROM stock_ledger WHERE order_id = ? AND sku = ? AND op = ?"+s.forUpdate(),
			orderID, l.SKU, OpDeduct).Scan(&deducted).Error; err != nil {
			return nil, fmt.Errorf("restore %s: read deduct %s: %w", orderID, l.SKU, err)
		}
		var qty int64
		if len(deducted) > 0 {
			qty = deducted[0]
		}
		if err := s.insertLedger(tx, OpRestore, now, ledgerEntry{orderID, l.SKU, qty}); err != nil {
			if isDuplicate(err) {
				out = append(out, ordersaga.RestoreLine{SKU: l.SKU, Duplicate: true})
				continue
			}
			return nil, fmt.Errorf("restore %s: ledger %s: %w", orderID, l.SKU, err)
		}
		if qty == 0 {
			out = append(out, ordersaga.RestoreLine{SKU: l.SKU, Tombstone: true})
			continue
		}
		if err := tx.Exec("UPDATE inventory SET stock = stock + ?, updated_at = ? WHERE sku = ?",
			qty, now, l.SKU).Error; err != nil {
			return nil, fmt.Errorf("restore %s: update %s: %w", orderID, l.SKU, err)
		}
		if err := s.releaseUserUnits(tx, l.SKU, st.UserID, qty); err != nil {
			return nil, fmt.Errorf("restore %s: %w", orderID, err)
		}
		out = append(out, ordersaga.RestoreLine{SKU: l.SKU, Qty: qty})
	}
	return out, nil
}

// Conservation is a SKU's stock with its ledger's totals, read together (invariant I1: Stock + Deducted −
// Restored is every unit ever stocked).
type Conservation struct {
	Stock    int64
	Deducted int64 // Σ DEDUCT
	Restored int64 // Σ RESTORE
}

// Conservation reads the stock and the ledger's totals of a SKU in one statement, so that all three come from
// one snapshot even while deducts and restores commit: read in two statements, a restore committing between
// them shows its units twice (I1 off by the restore, a read skew and not a loss).
func (s *Store) Conservation(ctx context.Context, sku string) (Conservation, error) {
	var rows []Conservation
	err := s.db.WithContext(ctx).Raw(`SELECT i.stock AS stock,
			(SELECT COALESCE(SUM(l.qty), 0) FROM stock_ledger l WHERE l.sku = i.sku AND l.op = ?) AS deducted,
			(SELECT COALESCE(SUM(l.qty), 0) FROM stock_ledger l WHERE l.sku = i.sku AND l.op = ?) AS restored
		FROM inventory i WHERE i.sku = ?`, OpDeduct, OpRestore, sku).Scan(&rows).Error
	if err != nil {
		return Conservation{}, fmt.Errorf("conservation %s: %w", sku, err)
	}
	if len(rows) == 0 {
		return Conservation{}, &ordersaga.UnknownSKUError{SKU: sku}
	}
	return rows[0], nil
}
