package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
)

func (s *Store) insertOrder(tx *gorm.DB, r ordersaga.OrderRecord, now time.Time) error {
	return s.insertOrders(tx, []ordersaga.OrderRecord{r}, now)
}

// insertOrders records orders and their lines: one INSERT for the orders, one for the lines. A duplicate
// order ID fails it (isDuplicate), and with several rows on SQLite the whole transaction (insertRows).
func (s *Store) insertOrders(tx *gorm.DB, recs []ordersaga.OrderRecord, now time.Time) error {
	amounts := make([]int64, len(recs))
	for i, r := range recs {
		a, err := ordersaga.Amount(r.Lines)
		if err != nil {
			return fmt.Errorf("order %s: %w", r.OrderID, err)
		}
		amounts[i] = a
	}
	if err := s.insertRows(tx, "orders", []string{"order_id", "user_id", "status", "amount_cents", "currency", "pay_by", "closed_reason", "created_at", "updated_at"},
		len(recs), func(i int, args []any) []any {
			r := recs[i]
			return append(args, r.OrderID, r.UserID, string(r.Status), amounts[i], r.Currency, r.PayBy,
				nullable(clip(r.ClosedReason, closedReasonChars)), now, now)
		}); err != nil {
		return err
	}
	type line struct {
		orderID string
		ordersaga.Line
	}
	var lines []line
	for _, r := range recs {
		for _, l := range r.Lines {
			lines = append(lines, line{r.OrderID, l})
		}
	}
	if err := s.insertRows(tx, "order_lines", []string{"order_id", "sku", "qty", "unit_price_cents"}, len(lines), func(i int, args []any) []any {
		return append(args, lines[i].orderID, lines[i].SKU, lines[i].Qty, lines[i].UnitPriceCents)
	}); err != nil {
		return fmt.Errorf("order lines: %w", err)
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Order reads one order with its lines; ordersaga.ErrNotFound when it does not exist.
func (s *Store) Order(ctx context.Context, orderID string) (ordersaga.OrderRecord, error) {
	var rows []struct {
		OrderID        string
		UserID         string
		Status         string
		AmountCents    int64
		Currency       string
		PayBy          *time.Time
		PaidAt         *time.Time
		PaymentEventID *string
		ClosedReason   *string
		CreatedAt      time.Time
		UpdatedAt      time.Time
	}
	db := s.db.WithContext(ctx)
	if err := db.Raw(`SELECT order_id, user_id, status, amount_cents, currency, pay_by, paid_at, payment_event_id,
		closed_reason, created_at, updated_at FROM orders WHERE order_id = ?`, orderID).Scan(&rows).Error; err != nil {
		return ordersaga.OrderRecord{}, fmt.Errorf("order %s: %w", orderID, err)
	}
	if len(rows) == 0 {
		return ordersaga.OrderRecord{}, fmt.Errorf("order %s: %w", orderID, ordersaga.ErrNotFound)
	}
	r := rows[0]
	rec := ordersaga.OrderRecord{
		OrderID: r.OrderID, UserID: r.UserID, Status: ordersaga.Status(r.Status), AmountCents: r.AmountCents,
		Currency: r.Currency, PayBy: utcPtr(r.PayBy), PaidAt: utcPtr(r.PaidAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.PaymentEventID != nil {
		rec.PaymentEventID = *r.PaymentEventID
	}
	if r.ClosedReason != nil {
		rec.ClosedReason = *r.ClosedReason
	}
	if err := db.Raw("SELECT sku, qty, unit_price_cents FROM order_lines WHERE order_id = ? ORDER BY sku", orderID).
		Scan(&rec.Lines).Error; err != nil {
		return ordersaga.OrderRecord{}, fmt.Errorf("order %s: lines: %w", orderID, err)
	}
	return rec, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// orderState is what the order's row says under its lock.
type orderState struct {
	Status         ordersaga.Status
	PaymentEventID *string
	UserID         string
}

// lockOrder reads the order's row with a locking read: the order's row lock is what orders Deduct's
// decision on a retry, Restore, MarkPaid and CloseOrder of one order against each other.
func (s *Store) lockOrder(tx *gorm.DB, orderID string) (orderState, bool, error) {
	var rows []orderState
	if err := tx.Raw("SELECT status, payment_event_id, user_id FROM orders WHERE order_id = ?"+s.forUpdate(), orderID).
		Scan(&rows).Error; err != nil {
		return orderState{}, false, fmt.Errorf("lock order: %w", err)
	}
	if len(rows) == 0 {
		return orderState{}, false, nil
	}
	return rows[0], true, nil
}

// hasRestore reports whether any line of the order has a RESTORE row (a restore or its tombstone).
func hasRestore(tx *gorm.DB, orderID string) (bool, error) {
	var n int64
	if err := tx.Raw("SELECT COUNT(*) FROM stock_ledger WHERE order_id = ? AND op = ?", orderID, OpRestore).
		Scan(&n).Error; err != nil {
		return false, fmt.Errorf("read restores: %w", err)
	}
	return n > 0, nil
}

// CloseOrder moves an open order to a final status (EXPIRED, CANCELLED, REJECTED), and gives back a deduct
// of it that still stands, in the same transaction: an unpaid order never closes with its units out of
// stock (after the workflow's own compensation those restores are duplicates; a later life of the order ID
// whose reserve failed closes its dead first life's deduct here). An order that never reached the database
// (rejected before its deduct) is recorded with the given lines. A final status is never changed, so a stale
// retry cannot undo a later transition: the record as it now stands is returned, and the caller compares its
// status with the one it asked for (a PAID order stays PAID).
func (s *Store) CloseOrder(ctx context.Context, r ordersaga.OrderRecord) (ordersaga.OrderRecord, error) {
	if !r.Status.Final() || r.Status == ordersaga.StatusPaid {
		return ordersaga.OrderRecord{}, fmt.Errorf("close order %s: status %q is not a closing status", r.OrderID, r.Status)
	}
	err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		_, err := s.closeTx(tx, r)
		return err
	})
	if err != nil {
		return ordersaga.OrderRecord{}, fmt.Errorf("close order %s: %w", r.OrderID, err)
	}
	return s.Order(ctx, r.OrderID)
}

// closeTx is CloseOrder inside the caller's transaction, under the order's row lock; it returns what the
// restore of a closed order's standing deduct did (nil when this call did not close the order).
func (s *Store) closeTx(tx *gorm.DB, r ordersaga.OrderRecord) ([]ordersaga.RestoreLine, error) {
	now := s.now()
	st, found, err := s.lockOrder(tx, r.OrderID)
	switch {
	case err != nil:
		return nil, err
	case !found:
		if err := s.insertOrder(tx, r, now); err != nil {
			if isDuplicate(err) {
				return nil, errRunAgain // a concurrent first record: decide again under its lock
			}
			return nil, err
		}
		return nil, nil
	case st.Status.Final():
		return nil, nil
	}
	if err := tx.Exec("UPDATE orders SET status = ?, closed_reason = ?, updated_at = ? WHERE order_id = ?",
		string(r.Status), nullable(clip(r.ClosedReason, closedReasonChars)), now, r.OrderID).Error; err != nil {
		return nil, err
	}
	var lines []ordersaga.Line
	if err := tx.Raw("SELECT sku, qty FROM order_lines WHERE order_id = ? ORDER BY sku", r.OrderID).Scan(&lines).Error; err != nil {
		return nil, fmt.Errorf("lines: %w", err)
	}
	if len(lines) == 0 {
		return nil, nil
	}
	return s.restoreTx(tx, r.OrderID, lines)
}

// CloseUnpaid closes an order whose workflow is gone (reconciliation's leaked-order repair, a cancel of an
// order Temporal no longer knows) and gives back its stock, in one transaction under the order's row lock:
// the close comes first and the restore runs only when this call closed the order, so a payment that
// commits meanwhile either wins (the order stays PAID, nothing restored) or is refused (MarkPaid sees the
// RESTORE). The order must exist; ordersaga.ErrNotFound otherwise. It returns the order as it now stands and what the
// restore did (nil when the order was already final). The Redis release is the caller's, after this.
func (s *Store) CloseUnpaid(ctx context.Context, orderID string, status ordersaga.Status, reason string) (ordersaga.OrderRecord, []ordersaga.RestoreLine, error) {
	if status != ordersaga.StatusExpired && status != ordersaga.StatusCancelled {
		return ordersaga.OrderRecord{}, nil, fmt.Errorf("close unpaid %s: status %q is not EXPIRED or CANCELLED", orderID, status)
	}
	var restored []ordersaga.RestoreLine
	err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		_, found, err := s.lockOrder(tx, orderID)
		switch {
		case err != nil:
			return err
		case !found:
			return ordersaga.ErrNotFound
		}
		restored, err = s.closeTx(tx, ordersaga.OrderRecord{OrderID: orderID, Status: status, ClosedReason: reason})
		return err
	})
	if err != nil {
		return ordersaga.OrderRecord{}, nil, fmt.Errorf("close unpaid %s: %w", orderID, err)
	}
	rec, err := s.Order(ctx, orderID)
	return rec, restored, err
}

// MarkPaid moves an AWAITING_PAYMENT order to PAID and records the payment as applied, in one transaction
// under the order's row lock. Running it again for the same event is a no-op; it fails with
// ordersaga.ErrOrderNotPayable when the order is in any other state, or when any line of it was restored (a
// compensation or a leaked-order repair ran first: the payment is the caller's to refund).
func (s *Store) MarkPaid(ctx context.Context, p ordersaga.PaymentRecord, paidAt time.Time) error {
	err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		st, found, err := s.lockOrder(tx, p.OrderID)
		if err != nil {
			return err
		}
		switch {
		case !found:
			return ordersaga.ErrOrderNotPayable
		case st.Status == ordersaga.StatusPaid:
			if st.PaymentEventID == nil || *st.PaymentEventID != p.EventID {
				return ordersaga.ErrOrderNotPayable
			}
		case st.Status != ordersaga.StatusAwaitingPayment:
			return ordersaga.ErrOrderNotPayable
		default:
			restored, err := hasRestore(tx, p.OrderID)
			if err != nil {
				return err
			}
			if restored {
				return fmt.Errorf("its stock was restored: %w", ordersaga.ErrOrderNotPayable)
			}
			if err := tx.Exec("UPDATE orders SET status = ?, paid_at = ?, payment_event_id = ?, updated_at = ? WHERE order_id = ?",
				string(ordersaga.StatusPaid), paidAt, p.EventID, s.now(), p.OrderID).Error; err != nil {
				return err
			}
		}
		p.Result = ordersaga.PaymentApplied
		err = insertPayment(tx, p, s.now())
		if err == nil {
			return nil
		}
		if !isDuplicate(err) {
			return err
		}
		// The event is known: only its own earlier application may stand, never a refunded or rejected one.
		var prior []struct {
			OrderID string
			Result  string
		}
		if err := tx.Raw("SELECT order_id, result FROM payments WHERE event_id = ?", p.EventID).Scan(&prior).Error; err != nil {
			return err
		}
		if len(prior) == 0 || prior[0].OrderID != p.OrderID || prior[0].Result != string(ordersaga.PaymentApplied) {
			return fmt.Errorf("event %s was already recorded as %v: %w", p.EventID, prior, ordersaga.ErrOrderNotPayable)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark paid %s: %w", p.OrderID, err)
	}
	return nil
}

// insertPayment writes a payments row, every one: an amount outside 0 to ordersaga.MaxAmountCents is refused
// (ordersaga.ErrAmountOverflow) before anything is written.
func insertPayment(tx *gorm.DB, p ordersaga.PaymentRecord, now time.Time) error {
	if err := checkPaymentAmount(p); err != nil {
		return err
	}
	return tx.Exec(`INSERT INTO payments (event_id, order_id, amount_cents, currency, result, detail, refunded_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		p.EventID, p.OrderID, p.AmountCents, p.Currency, string(p.Result), nullable(clip(p.Detail, paymentDetailChars)), p.RefundedAt, now).Error
}

// RecordPayment stores a payment event that was not applied (refunded, rejected amount), recorded for refund
// at once (refunded_at). The first record of an event wins: a second call returns the stored record and
// inserted=false, so a refund happens once.
func (s *Store) RecordPayment(ctx context.Context, p ordersaga.PaymentRecord) (rec ordersaga.PaymentRecord, inserted bool, err error) {
	if p.EventID == "" {
		return ordersaga.PaymentRecord{}, false, errors.New("record payment: event_id is empty")
	}
	if p.Result.Refunds() && p.RefundedAt == nil {
		t := s.now()
		p.RefundedAt = &t
	}
	err = s.inTx(ctx, func(tx *gorm.DB) error {
		err := insertPayment(tx, p, s.now())
		if err == nil {
			inserted = true
			return nil
		}
		if isDuplicate(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return ordersaga.PaymentRecord{}, false, fmt.Errorf("record payment %s: %w", p.EventID, err)
	}
	rec, err = s.Payment(ctx, p.EventID)
	return rec, inserted, err
}

// Payment reads one payment event; ordersaga.ErrNotFound when unknown.
func (s *Store) Payment(ctx context.Context, eventID string) (ordersaga.PaymentRecord, error) {
	rows, err := s.paymentEntries(ctx, "payment "+eventID, "event_id = ?", eventID)
	if err != nil {
		return ordersaga.PaymentRecord{}, err
	}
	if len(rows) == 0 {
		return ordersaga.PaymentRecord{}, fmt.Errorf("payment %s: %w", eventID, ordersaga.ErrNotFound)
	}
	return rows[0].PaymentRecord, nil
}
