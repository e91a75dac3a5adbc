package sale

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite" // the "sqlite" driver, as the store uses

	"github.com/ordersaga/ordersaga"
)

// DBReader reads the database's view of a run's SKUs (the same tables internal/invariants checks).
type DBReader struct {
	db *sql.DB
}

// OpenDBReader opens MySQL at dsn, or else the SQLite file at path (read-only).
func OpenDBReader(ctx context.Context, dsn, path string) (*DBReader, error) {
	var (
		db  *sql.DB
		err error
	)
	if dsn != "" {
		cfg, perr := mysql.ParseDSN(dsn)
		if perr != nil {
			return nil, fmt.Errorf("--mysql-dsn: %w", perr)
		}
		cfg.ParseTime = true
		cfg.Loc = time.UTC
		db, err = sql.Open("mysql", cfg.FormatDSN())
	} else {
		db, err = sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	}
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &DBReader{db: db}, nil
}

// Close closes the database.
func (r *DBReader) Close() error { return r.db.Close() }

func in(skus []string) (string, []any) {
	args := make([]any, len(skus))
	for i, s := range skus {
		args[i] = s
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?,", len(skus)), ",") + ")", args
}

// LedgerRows counts the ledger rows of the SKUs (0 for fresh SKUs).
func (r *DBReader) LedgerRows(ctx context.Context, skus []string) (int64, error) {
	list, args := in(skus)
	var n int64
	if err := r.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock_ledger WHERE sku IN "+list, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("database: count ledger rows: %w", err)
	}
	return n, nil
}

// OpenOrders counts the orders on the SKUs that the database still holds open (RESERVING or
// AWAITING_PAYMENT). The workflow records a closed order last, after its compensation: 0 means every
// compensation has finished.
func (r *DBReader) OpenOrders(ctx context.Context, skus []string) (int64, error) {
	list, args := in(skus)
	var n int64
	err := r.db.QueryRowContext(ctx, `SELECT COUNT(DISTINCT o.order_id) FROM orders o JOIN order_lines ol ON ol.order_id = o.order_id
		WHERE ol.sku IN `+list+` AND o.status IN (?, ?)`,
		append(args, string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment))...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("database: count open orders: %w", err)
	}
	return n, nil
}

// Snapshot reads the SKUs' stock and ledger, the orders on them that kept or took stock or are not
// REJECTED, and those orders' payments.
func (r *DBReader) Snapshot(ctx context.Context, skus []string) (*DBSnapshot, error) {
	list, args := in(skus)
	s := &DBSnapshot{Stock: map[string]int64{}}
	err := r.each(ctx, "SELECT sku, stock FROM inventory WHERE sku IN "+list, args, func(rows *sql.Rows) error {
		var sku string
		var stock int64
		if err := rows.Scan(&sku, &stock); err != nil {
			return err
		}
		s.Stock[sku] = stock
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("database: inventory: %w", err)
	}
	err = r.each(ctx, "SELECT order_id, sku, op, qty FROM stock_ledger WHERE sku IN "+list+" ORDER BY id", args, func(rows *sql.Rows) error {
		var l LedgerRow
		if err := rows.Scan(&l.OrderID, &l.SKU, &l.Op, &l.Qty); err != nil {
			return err
		}
		s.Ledger = append(s.Ledger, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("database: ledger: %w", err)
	}
	byID := map[string]int{}
	err = r.each(ctx, `SELECT o.order_id, o.user_id, o.status, o.pay_by, o.amount_cents, o.currency, ol.sku, ol.qty, ol.unit_price_cents
		FROM orders o JOIN order_lines ol ON ol.order_id = o.order_id
		WHERE o.order_id IN (SELECT order_id FROM order_lines WHERE sku IN `+list+`)
		  AND (o.status <> ? OR EXISTS (SELECT 1 FROM stock_ledger l WHERE l.order_id = o.order_id))
		ORDER BY o.id, ol.sku`, append(args, string(ordersaga.StatusRejected)), func(rows *sql.Rows) error {
		var (
			id, user, status, currency string
			payBy                      any
			amount                     int64
			l                          ordersaga.Line
		)
		if err := rows.Scan(&id, &user, &status, &payBy, &amount, &currency, &l.SKU, &l.Qty, &l.UnitPriceCents); err != nil {
			return err
		}
		i, ok := byID[id]
		if !ok {
			i = len(s.Orders)
			byID[id] = i
			o := DBOrder{OrderID: id, UserID: user, Status: ordersaga.Status(status), AmountCents: amount, Currency: currency}
			t, err := asTime(payBy)
			if err != nil {
				return fmt.Errorf("order %s pay_by: %w", id, err)
			}
			o.PayBy = t
			s.Orders = append(s.Orders, o)
		}
		s.Orders[i].Lines = append(s.Orders[i].Lines, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("database: orders: %w", err)
	}
	err = r.each(ctx, `SELECT event_id, order_id, result, amount_cents, currency,
			CASE WHEN refunded_at IS NULL THEN 0 ELSE 1 END, CASE WHEN refund_sent_at IS NULL THEN 0 ELSE 1 END,
			refund_ref, CASE WHEN refund_refused_at IS NULL THEN 0 ELSE 1 END
		FROM payments WHERE order_id IN (SELECT order_id FROM order_lines WHERE sku IN `+list+`) ORDER BY id`, args, func(rows *sql.Rows) error {
		var p DBPayment
		var refunded, sent, refused int64
		var ref sql.NullString
		if err := rows.Scan(&p.EventID, &p.OrderID, &p.Result, &p.AmountCents, &p.Currency, &refunded, &sent, &ref, &refused); err != nil {
			return err
		}
		p.Refunded, p.RefundSent, p.RefundRef, p.RefundRefused = refunded == 1, sent == 1, ref.String, refused == 1
		s.Payments = append(s.Payments, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("database: payments: %w", err)
	}
	return s, nil
}

func (r *DBReader) each(ctx context.Context, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := r.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// asTime reads a DATETIME column as either driver returns it.
func asTime(v any) (*time.Time, error) {
	var s string
	switch t := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		u := t.UTC()
		return &u, nil
	case []byte:
		s = string(t)
	case string:
		s = t
	default:
		return nil, fmt.Errorf("unexpected %T", v)
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			u := t.UTC()
			return &u, nil
		}
	}
	return nil, fmt.Errorf("cannot parse %q", s)
}
