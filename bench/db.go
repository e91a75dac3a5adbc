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

// benchDB is layer 4: Store.Deduct of one unit of one hot SKU (a new order each call, the deducts that
// arrive together committed together) against the bare conditional UPDATE on the same database and pool;
// plus Store.Deduct against itself with every deduct in a transaction of its own, to show what the group
// commit bought.
func benchDB(ctx context.Context, o opts) ([]pair, error) {
	var out []pair
	if o.mysqlDSN != "" {
		dsn, drop, err := createMySQLDatabase(ctx, o.mysqlDSN)
		if err != nil {
			return nil, err
		}
		defer drop()
		p, err := benchStore(ctx, o, "4 DB deduct, one hot SKU (MariaDB)", "db-mysql", dsn, "")
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	if o.sqlite {
		p, err := benchStore(ctx, o, "4s DB deduct, one hot SKU (SQLite, local stack)", "db-sqlite", "", filepath.Join(o.tmp, "bench.db"))
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

func benchStore(ctx context.Context, o opts, layer, profile, dsn, path string) ([]pair, error) {
	store, err := sqlstore.Open(ctx, dsn, path)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	// The same database through a store that commits every deduct on its own (the deduct before group commit).
	alone, err := sqlstore.Open(ctx, dsn, path)
	if err != nil {
		return nil, err
	}
	defer alone.Close()
	alone.SetDeductBatch(0)
	if err := store.SetInventory(ctx, hotSKU, 1<<40, 999); err != nil {
		return nil, err
	}
	sqlDB, err := store.DB().DB()
	if err != nil {
		return nil, err
	}
	run := "d" + randomID()
	payBy := time.Now().Add(time.Hour).UTC()
	deductWith := func(s *sqlstore.Store, prefix string) op {
		return func(ctx context.Context, w int, seq int64) error {
			_, err := s.Deduct(ctx, ordersaga.DeductInput{
				OrderID: apiOrderID("bench", run+prefix+strconv.FormatInt(seq, 10)), UserID: "bench", Currency: "CNY", PayBy: payBy,
				Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}},
			})
			return err
		}
	}
	bare := func(ctx context.Context, w int, seq int64) error {
		_, err := sqlDB.ExecContext(ctx, "UPDATE inventory SET stock = stock - 1 WHERE sku = ? AND stock >= 1", hotSKU)
		return err
	}
	conc := o.conc
	before := store.DeductBatchStats()
	real, limit := measurePair(ctx, o, conc, profile, "Store.Deduct (group commit)", deductWith(store, "-g"), "bare UPDATE … stock >= 1", bare)
	after := store.DeductBatchStats()
	grouped, single := measurePair(ctx, o, conc, "", "Store.Deduct (group commit)", deductWith(store, "-h"), "Store.Deduct, a transaction per deduct", deductWith(alone, "-s"))
	batches := after.Batches - before.Batches
	comment := fmt.Sprintf("%d goroutines, pool of the store; %d group commits of %.1f deducts on average, %d ran alone, %d fell back to one at a time",
		conc, batches, float64(after.Batched-before.Batched)/float64(max(batches, 1)), after.Alone-before.Alone, after.Fallbacks-before.Fallbacks)
	return []pair{
		{Layer: layer, Real: real, Limit: limit, Target: 1, Comment: comment},
		{Layer: layer + " — what the group commit bought", Real: grouped, Limit: single,
			Comment: "Store.Deduct with the deducts that arrive together in one transaction against the same store with a transaction per deduct (the hot-row UPDATE last in both; ratio > 100% = gain)"},
	}, nil
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
