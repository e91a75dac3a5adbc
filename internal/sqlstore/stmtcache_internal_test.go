package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	msqlite "modernc.org/sqlite"

	"github.com/ordersaga/ordersaga"
)

// openCached is one SQLite connection with a statement cache of size entries, on a fresh file with a table t
// of ten rows (n = 1..10).
func openCached(t *testing.T, size int) (*sql.Conn, func() *cachingConn) {
	t.Helper()
	ctx := t.Context()
	dsn := "file:" + filepath.Join(t.TempDir(), "cache.db") + "?_pragma=journal_mode(WAL)"
	db := sql.OpenDB(&stmtCacheConnector{drv: &msqlite.Driver{}, dsn: dsn, size: size})
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A script without arguments runs uncached, all of it.
	if _, err := conn.ExecContext(ctx, "CREATE TABLE t (n INTEGER); WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 10) INSERT INTO t SELECT n FROM c"); err != nil {
		t.Fatal(err)
	}
	return conn, func() *cachingConn {
		var cc *cachingConn
		if err := conn.Raw(func(dc any) error { cc = dc.(*cachingConn); return nil }); err != nil {
			t.Fatal(err)
		}
		return cc
	}
}

func countAbove(t *testing.T, conn *sql.Conn, query string, n int) int {
	t.Helper()
	var got int
	if err := conn.QueryRowContext(context.Background(), query, n).Scan(&got); err != nil {
		t.Fatalf("%s (%d): %v", query, n, err)
	}
	return got
}

// TestStmtCache_RunsAStatementAgainCompiled: the second run of a text with arguments is a hit and answers for
// its own arguments; a statement without arguments is never kept.
func TestStmtCache_RunsAStatementAgainCompiled(t *testing.T) {
	conn, cache := openCached(t, 4)
	const q = "SELECT COUNT(*) FROM t WHERE n > ?"
	if got := countAbove(t, conn, q, 3); got != 7 {
		t.Fatalf("n > 3: %d rows, want 7", got)
	}
	if got := countAbove(t, conn, q, 8); got != 2 {
		t.Fatalf("n > 8 (the kept statement, new argument): %d rows, want 2", got)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE t SET n = n + ? WHERE n = ?", 100, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE t SET n = n + ? WHERE n = ?", 100, 2); err != nil {
		t.Fatal(err)
	}
	if got := countAbove(t, conn, q, 100); got != 2 {
		t.Fatalf("after two kept UPDATEs: %d rows above 100, want 2", got)
	}
	c := cache()
	if c.hits != 3 || c.misses != 2 || c.lru.Len() != 2 {
		t.Fatalf("hits %d, misses %d, kept %d; want 3, 2, 2 (the SELECT run three times, the UPDATE twice; the script not kept)", c.hits, c.misses, c.lru.Len())
	}
}

// TestStmtCache_ARunningQueryIsNotReset: while a kept statement's rows are open, the same text runs uncached
// and the open rows go on from where they were; an evicted statement whose rows are open is finalized when
// they are closed, and its rows read to the end first.
func TestStmtCache_ARunningQueryIsNotReset(t *testing.T) {
	conn, cache := openCached(t, 2)
	ctx := t.Context()
	const q = "SELECT n FROM t WHERE n > ? ORDER BY n"
	rows, err := conn.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	next := func() {
		t.Helper()
		if !rows.Next() {
			t.Fatalf("rows ended after %v: %v", seen, rows.Err())
		}
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, n)
	}
	next()
	next()
	// The same text while its rows are open: answered, and the open rows not disturbed.
	inner, err := conn.QueryContext(ctx, q, 8)
	if err != nil {
		t.Fatal(err)
	}
	var innerSeen []int
	for inner.Next() {
		var n int
		if err := inner.Scan(&n); err != nil {
			t.Fatal(err)
		}
		innerSeen = append(innerSeen, n)
	}
	if err := inner.Close(); err != nil {
		t.Fatal(err)
	}
	if len(innerSeen) != 2 || innerSeen[0] != 9 || innerSeen[1] != 10 {
		t.Fatalf("the same text while its rows were open gave %v, want [9 10]", innerSeen)
	}
	// Two other statements evict the open one (size 2).
	countAbove(t, conn, "SELECT COUNT(*) FROM t WHERE n > ? AND 1", 0)
	countAbove(t, conn, "SELECT COUNT(*) FROM t WHERE n > ? AND 2", 0)
	if _, kept := cache().byText[q]; kept {
		t.Fatal("the open statement is still kept after two newer ones, want evicted (size 2)")
	}
	for len(seen) < 10 {
		next()
	}
	if rows.Next() {
		t.Fatal("more than 10 rows")
	}
	if err := rows.Close(); err != nil {
		t.Fatalf("closing the rows of an evicted statement: %v", err)
	}
	for i, n := range seen {
		if n != i+1 {
			t.Fatalf("the open rows read %v, want 1..10 in order", seen)
		}
	}
	// The text runs again (compiled anew) and is kept again.
	if got := countAbove(t, conn, "SELECT COUNT(*) FROM t WHERE n > ?", 5); got != 5 {
		t.Fatalf("n > 5: %d, want 5", got)
	}
}

// TestStmtCache_SeesASchemaChange: a kept statement compiled before ALTER TABLE sees the new column.
func TestStmtCache_SeesASchemaChange(t *testing.T) {
	conn, _ := openCached(t, 4)
	ctx := t.Context()
	const q = "SELECT * FROM t WHERE n = ?"
	cols := func() int {
		rows, err := conn.QueryContext(ctx, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		c, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return len(c)
	}
	if n := cols(); n != 1 {
		t.Fatalf("%d columns, want 1", n)
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE t ADD COLUMN m INTEGER NOT NULL DEFAULT 7"); err != nil {
		t.Fatal(err)
	}
	if n := cols(); n != 2 {
		t.Fatalf("after ALTER TABLE: %d columns, want 2", n)
	}
}

// TestStore_SQLiteRunsItsStatementsCompiled: the store's SQLite connection keeps the statements of the group
// commit: a second batch of the same size compiles nothing.
func TestStore_SQLiteRunsItsStatementsCompiled(t *testing.T) {
	ctx := t.Context()
	s := openSQLiteStore(t)
	if err := s.SetInventory(ctx, "SKU-C", 100, 5); err != nil {
		t.Fatal(err)
	}
	batch := func(prefix string) {
		t.Helper()
		var ins []ordersaga.DeductInput
		for i := range 20 {
			ins = append(ins, ordersaga.DeductInput{OrderID: fmt.Sprintf("%s-%d", prefix, i), UserID: "u", Currency: "CNY",
				Lines: []ordersaga.Line{{SKU: "SKU-C", Qty: 1}}})
		}
		_, errs := s.DeductAsOneBatch(ctx, ins...)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("deduct %d of batch %s: %v", i, prefix, err)
			}
		}
	}
	counts := func() (hits, misses int64) {
		t.Helper()
		sqlDB, err := s.db.DB()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.Raw(func(dc any) error {
			c := dc.(*cachingConn)
			hits, misses = c.hits, c.misses
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return hits, misses
	}
	batch("a")
	hits1, misses1 := counts()
	batch("b")
	hits2, misses2 := counts()
	if misses2 != misses1 || hits2-hits1 < 6 {
		t.Fatalf("the second batch of 20: %d statements compiled, %d run kept; want 0 compiled, at least 6 kept (its reads, INSERTs, UPDATE)",
			misses2-misses1, hits2-hits1)
	}
}

func openSQLiteStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), "", filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestInsertRows_WhatADuplicateLeaves: on SQLite a duplicate among several rows rolls back the caller's whole
// transaction (the rows it wrote before are gone), and a duplicate of one row fails that statement alone (the
// transaction goes on and commits what it wrote, as a deduct and a restore rely on).
func TestInsertRows_WhatADuplicateLeaves(t *testing.T) {
	ctx := t.Context()
	s := openSQLiteStore(t)
	now := s.now()
	if err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		return s.insertLedger(tx, OpDeduct, now, ledgerEntry{"dup", "S", 1})
	}); err != nil {
		t.Fatal(err)
	}
	ledgerRows := func(orderID string) int64 {
		var n int64
		if err := s.db.Raw("SELECT COUNT(*) FROM stock_ledger WHERE order_id = ?", orderID).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}

	err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		if err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{"before", "S", 1}); err != nil {
			return err
		}
		err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{"fresh", "S", 1}, ledgerEntry{"dup", "S", 1})
		if !isDuplicate(err) {
			t.Errorf("several rows, one a duplicate: %v, want a duplicate", err)
		}
		return err
	})
	if err == nil {
		t.Fatal("the transaction committed after a failed insert")
	}
	if n := ledgerRows("before") + ledgerRows("fresh"); n != 0 {
		t.Fatalf("%d rows of the failed transaction stand, want 0", n)
	}

	if err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		if err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{"dup", "S", 1}); !isDuplicate(err) {
			t.Errorf("one row, a duplicate: %v, want a duplicate", err)
		}
		return s.insertLedger(tx, OpDeduct, now, ledgerEntry{"after", "S", 1})
	}); err != nil {
		t.Fatalf("a transaction that went on after a duplicate of one row: %v", err)
	}
	if n := ledgerRows("after"); n != 1 {
		t.Fatalf("the row written after a one-row duplicate: %d, want 1", n)
	}
}

// TestInsertRows_SharedValuesBoundOnce: on SQLite a value that every row of a several-row INSERT holds is bound
// once and repeated by number, and the rows read back exactly as rows inserted one at a time (the same text for
// times, NULLs where nil, each row's own values where they differ).
func TestInsertRows_SharedValuesBoundOnce(t *testing.T) {
	ctx := t.Context()
	s := openSQLiteStore(t)
	now := s.now()
	payBy := now.Add(time.Hour)
	later := payBy.Add(time.Second)
	recs := func(prefix string) []ordersaga.OrderRecord {
		a, b := payBy, payBy // the same time behind two pointers: another value to ==, bound per row
		return []ordersaga.OrderRecord{
			{OrderID: prefix + "1", UserID: "u1", Status: ordersaga.StatusAwaitingPayment, Currency: "CNY", PayBy: &a,
				Lines: []ordersaga.Line{{SKU: "S", Qty: 1, UnitPriceCents: 500}}},
			{OrderID: prefix + "2", UserID: "u2", Status: ordersaga.StatusAwaitingPayment, Currency: "CNY", PayBy: &b,
				Lines: []ordersaga.Line{{SKU: "S", Qty: 2, UnitPriceCents: 500}}},
			{OrderID: prefix + "3", UserID: "u1", Status: ordersaga.StatusAwaitingPayment, Currency: "CNY", PayBy: &later,
				Lines: []ordersaga.Line{{SKU: "S", Qty: 1, UnitPriceCents: 500}}},
		}
	}
	if err := s.ledgerTx(ctx, func(tx *gorm.DB) error {
		if err := s.insertOrders(tx, recs("many-"), now); err != nil {
			return err
		}
		for _, r := range recs("one-") {
			if err := s.insertOrder(tx, r, now); err != nil {
				return err
			}
		}
		if err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{"many-1", "S", 1}, ledgerEntry{"many-2", "S", 2}); err != nil {
			return err
		}
		if err := s.insertLedger(tx, OpDeduct, now, ledgerEntry{"one-1", "S", 1}); err != nil {
			return err
		}
		return s.insertLedger(tx, OpDeduct, now, ledgerEntry{"one-2", "S", 2})
	}); err != nil {
		t.Fatal(err)
	}
	read := func(q, prefix string) []string {
		t.Helper()
		rows, err := s.db.Raw(q, prefix+"%").Rows()
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%q", vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, q := range []string{
		`SELECT substr(order_id, instr(order_id, '-')), user_id, status, amount_cents, currency, CAST(pay_by AS TEXT), typeof(pay_by),
			closed_reason, CAST(created_at AS TEXT), CAST(updated_at AS TEXT) FROM orders WHERE order_id LIKE ? ORDER BY order_id`,
		`SELECT substr(order_id, instr(order_id, '-')), sku, qty, unit_price_cents FROM order_lines WHERE order_id LIKE ? ORDER BY order_id`,
		`SELECT substr(order_id, instr(order_id, '-')), sku, op, qty, CAST(created_at AS TEXT), typeof(created_at) FROM stock_ledger WHERE order_id LIKE ? ORDER BY order_id`,
	} {
		many, one := read(q, "many-"), read(q, "one-")
		if len(many) == 0 || !slices.Equal(many, one) {
			t.Errorf("%s\nseveral rows in one INSERT:\n%s\none INSERT per row:\n%s", q, strings.Join(many, "\n"), strings.Join(one, "\n"))
		}
	}

	// What is bound: the columns every row shares once, the others per row.
	cols := []string{"order_id", "sku", "op", "qty", "created_at"}
	args := []any{"a", "S", OpDeduct, int64(1), now, "b", "S", OpDeduct, int64(2), now, "c", "S", OpDeduct, int64(1), now}
	q, bound := sqliteRowsInsert("stock_ledger", cols, 3, args)
	wantQ := "INSERT OR ROLLBACK INTO stock_ledger (sku, op, created_at, order_id, qty) VALUES (?1, ?2, ?3, ?, ?), (?1, ?2, ?3, ?, ?), (?1, ?2, ?3, ?, ?)"
	wantArgs := []any{"S", OpDeduct, now, "a", int64(1), "b", int64(2), "c", int64(1)}
	if q != wantQ || !slices.Equal(bound, wantArgs) {
		t.Errorf("got %s %v\nwant %s %v", q, bound, wantQ, wantArgs)
	}
}
