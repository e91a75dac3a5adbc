package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

const hotSKU = "BENCH-HOT"

// benchDB is layer 4: Store.Deduct of one unit of one hot SKU (a new order each call) against the bare
// conditional UPDATE on the same database and pool; plus Store.Deduct against its statements in the order
// they had before (the hot-row UPDATE right after the ledger row), to show what moving the UPDATE last bought.
func benchDB(ctx context.Context, o opts) ([]pair, error) {
	var out []pair
	if o.mysqlDSN != "" {
		dsn, drop, err := createMySQLDatabase(ctx, o.mysqlDSN)
		if err != nil {
			return nil, err
		}
		defer drop()
		p, err := benchStore(ctx, o, "4 DB deduct, one hot SKU (MariaDB)", dsn, "")
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	if o.sqlite {
		p, err := benchStore(ctx, o, "4s DB deduct, one hot SKU (SQLite, local stack)", "", filepath.Join(o.tmp, "bench.db"))
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

func benchStore(ctx context.Context, o opts, layer, dsn, path string) ([]pair, error) {
	store, err := sqlstore.Open(ctx, dsn, path)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := store.SetInventory(ctx, hotSKU, 1<<40, 999); err != nil {
		return nil, err
	}
	sqlDB, err := store.DB().DB()
	if err != nil {
		return nil, err
	}
	run := "d" + randomID()
	payBy := time.Now().Add(time.Hour).UTC()
	deduct := func(ctx context.Context, w int, seq int64) error {
		_, err := store.Deduct(ctx, ordersaga.DeductInput{
			OrderID: run + "-" + strconv.FormatInt(seq, 10), UserID: "bench", Currency: "CNY", PayBy: payBy,
			Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}},
		})
		return err
	}
	bare := func(ctx context.Context, w int, seq int64) error {
		_, err := sqlDB.ExecContext(ctx, "UPDATE inventory SET stock = stock - 1 WHERE sku = ? AND stock >= 1", hotSKU)
		return err
	}
	updateFirst := func(ctx context.Context, w int, seq int64) error {
		return deductUpdateFirst(ctx, sqlDB, store.Dialect(), run+"-F"+strconv.FormatInt(seq, 10), payBy)
	}
	conc := o.conc
	comment := fmt.Sprintf("%d goroutines, pool of the store", conc)
	real, limit := measurePair(ctx, o, conc, "", "Store.Deduct", deduct, "bare UPDATE … stock >= 1", bare)
	now, before := measurePair(ctx, o, conc, "", "Store.Deduct", deduct, "deduct, hot-row UPDATE first", updateFirst)
	return []pair{
		{Layer: layer, Real: real, Limit: limit, Comment: comment},
		{Layer: layer + " — what the UPDATE last bought", Real: now, Limit: before, Comment: "Store.Deduct (hot-row UPDATE last, its lock held for the UPDATE and the COMMIT only) against the same statements with the UPDATE right after the ledger row, as before (ratio > 100% = gain)"},
	}, nil
}

// deductUpdateFirst is Store.Deduct's transaction in the statement order it had before it was measured: the
// ledger row, the restore check, then the conditional UPDATE of the hot row, and only then the price read and
// the order rows, all while holding the hot row's lock.
func deductUpdateFirst(ctx context.Context, db *sql.DB, dialect, orderID string, payBy time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := time.Now().UTC()
	if _, err := tx.ExecContext(ctx, "INSERT INTO stock_ledger (order_id, sku, op, qty, created_at) VALUES (?, ?, ?, ?, ?)",
		orderID, hotSKU, sqlstore.OpDeduct, 1, now); err != nil {
		return err
	}
	lock := ""
	if dialect == "mysql" {
		lock = " FOR UPDATE"
	}
	var restores int64
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock_ledger WHERE order_id = ? AND sku = ? AND op = ?"+lock,
		orderID, hotSKU, sqlstore.OpRestore).Scan(&restores); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, "UPDATE inventory SET stock = stock - 1, updated_at = ? WHERE sku = ? AND stock >= 1", now, hotSKU)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("deduct %s: sold out", orderID)
	}
	var price int64
	if err := tx.QueryRowContext(ctx, "SELECT price_cents FROM inventory WHERE sku = ?", hotSKU).Scan(&price); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (order_id, user_id, status, amount_cents, currency, pay_by, closed_reason, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, orderID, "bench", string(ordersaga.StatusAwaitingPayment), price, "CNY", payBy, nil, now, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO order_lines (order_id, sku, qty, unit_price_cents) VALUES (?, ?, ?, ?)",
		orderID, hotSKU, 1, price); err != nil {
		return err
	}
	return tx.Commit()
}

// createMySQLDatabase makes a database of the benchmark's own on the server of dsn; drop removes it.
func createMySQLDatabase(ctx context.Context, dsn string) (string, func(), error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("MYSQL_DSN: %w", err)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	name := "ordersaga_bench_" + randomID()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	cfg.DBName = name
	return cfg.FormatDSN(), func() {
		_, _ = db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name)
		db.Close()
	}, nil
}
