package faults_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/faults"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// lockedStore opens a store of the test's own whose sessions wait 1 s for a row lock (1205 after that),
// seeded with the SKUs, a raw pool on the same database for a Crosser, and an administrator's pool (no
// default database) for the server's counters.
func lockedStore(t *testing.T, skus ...string) (*sqlstore.Store, *sql.DB, *sql.DB) {
	t.Helper()
	requireRealStores(t)
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(testenv.MySQLDatabase(t))
	must(t, err)
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1"}
	store, err := sqlstore.Open(ctx, cfg.FormatDSN(), "")
	must(t, err)
	t.Cleanup(func() { store.Close() })
	for _, sku := range skus {
		must(t, store.SetInventory(ctx, sku, 10, 100))
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	must(t, err)
	t.Cleanup(func() { db.Close() })
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	must(t, err)
	t.Cleanup(func() { admin.Close() })
	return store, db, admin
}

// crossOnce runs one round of a crosser on the keys in the background; the returned function waits for it.
func crossOnce(t *testing.T, db *sql.DB, hold time.Duration, keys ...string) func() faults.CrossStats {
	t.Helper()
	c := &faults.Crosser{DB: db, Table: "inventory", Key: "sku", Keys: keys, Hold: hold, Ballast: 500, LockWait: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(keys))*hold+hold/2)
	done := make(chan faults.CrossStats, 1)
	go func() {
		st, err := c.Run(ctx)
		if err != nil {
			t.Errorf("crosser: %v", err)
		}
		done <- st
	}()
	time.Sleep(200 * time.Millisecond) // the crosser holds its first lock
	return func() faults.CrossStats { defer cancel(); return <-done }
}

func deduct(ctx context.Context, store *sqlstore.Store, orderID string, skus ...string) error {
	in := ordersaga.DeductInput{OrderID: orderID, UserID: "u1", Currency: "CNY", PayBy: time.Now().Add(time.Hour)}
	for _, sku := range skus {
		in.Lines = append(in.Lines, ordersaga.Line{SKU: sku, Qty: 1})
	}
	_, err := store.Deduct(ctx, in)
	return err
}

// TestStoreRetriesLockWaitTimeout: a row held 2.5 s against a session that waits 1 s: the deduct's first
// attempts end in 1205, and the store runs the transaction again until it goes through.
func TestStoreRetriesLockWaitTimeout(t *testing.T) {
	store, db, _ := lockedStore(t, "LCK-A")
	wait := crossOnce(t, db, 2500*time.Millisecond, "LCK-A")
	start := time.Now()
	err := deduct(context.Background(), store, "lock-wait-1", "LCK-A")
	took := time.Since(start)
	wait()
	if err != nil {
		t.Fatalf("deduct behind a 2.5 s row lock with a 1 s lock wait: %v", err)
	}
	if took < time.Second {
		t.Errorf("deduct took %s: it should have waited out at least one 1 s lock wait", took)
	}
	t.Logf("FIGURE store-1205: deduct behind a 2.5 s lock (lock wait 1 s) succeeded after %s", took.Round(time.Millisecond))
}

// TestStoreRetriesDeadlock: the crosser locks LCK-B then LCK-A while the store's deduct of both locks LCK-A
// then waits for LCK-B: InnoDB rolls back the lighter transaction (the store's: the crosser carries 500
// ballast rows) with 1213, and the store runs it again.
func TestStoreRetriesDeadlock(t *testing.T) {
	store, db, admin := lockedStore(t, "LCK-A", "LCK-B")
	ctx := context.Background()
	before, err := faults.ReadInnoDBCounters(ctx, admin)
	must(t, err)
	wait := crossOnce(t, db, 800*time.Millisecond, "LCK-A", "LCK-B")
	err = deduct(ctx, store, "deadlock-1", "LCK-A", "LCK-B")
	st := wait()
	after, rerr := faults.ReadInnoDBCounters(ctx, admin)
	must(t, rerr)
	if err != nil {
		t.Fatalf("deduct crossed by a deadlock: %v", err)
	}
	d := after.Sub(before)
	if d.Deadlocks < 1 {
		t.Errorf("no deadlock on the server (crosser %+v): the test did not cross the locks", st)
	}
	t.Logf("FIGURE store-1213: deduct succeeded; server deadlocks +%d, row lock waits +%d; crosser %+v", d.Deadlocks, d.RowLockWaits, st)
}
