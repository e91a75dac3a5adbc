package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// KillConnections kills (KILL CONNECTION) every connection of user on database schema but the caller's
// own, and returns how many it killed. db is an administrator's pool; a connection that ended in between
// is not an error.
func KillConnections(ctx context.Context, db *sql.DB, user, schema string) (int, error) {
	ids, err := connectionIDs(ctx, db, user, schema)
	if err != nil {
		return 0, err
	}
	killed := 0
	for _, id := range ids {
		_, err := db.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		if err != nil && !isErrorNumber(err, errUnknownThread) {
			return killed, fmt.Errorf("faults: kill connection %d of %s on %s: %w", id, user, schema, err)
		}
		if err == nil {
			killed++
		}
	}
	return killed, nil
}

// errUnknownThread is MySQL's "Unknown thread id" (the connection ended before the KILL).
const errUnknownThread = 1094

func connectionIDs(ctx context.Context, db *sql.DB, user, schema string) ([]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT id FROM information_schema.PROCESSLIST
		WHERE user = ? AND db = ? AND id <> CONNECTION_ID()`, user, schema)
	if err != nil {
		return nil, fmt.Errorf("faults: list connections of %s on %s: %w", user, schema, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("faults: list connections of %s on %s: %w", user, schema, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("faults: list connections of %s on %s: %w", user, schema, err)
	}
	return ids, nil
}

// isErrorNumber reports a MySQL server error with the given number ("Error 1094 (...): ..." in its text, so
// the package needs no driver import).
func isErrorNumber(err error, n int) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("Error %d", n))
}

// Crosser takes row locks on a table in the opposite order to the store's (the store locks inventory rows
// in ascending SKU order) and holds each for a while: a store transaction that holds a lower row and waits
// for a higher one deadlocks with it (1213), and one that waits longer than its session's
// innodb_lock_wait_timeout gets 1205. Its own transactions insert ballast rows first so that InnoDB, which
// rolls back the lighter transaction of a deadlock, picks the store's as the victim.
type Crosser struct {
	DB       *sql.DB       // a pool on the store's database
	Table    string        // the locked table, e.g. "inventory"
	Key      string        // its key column, e.g. "sku"
	Keys     []string      // the rows to lock (in descending order)
	Hold     time.Duration // how long each lock is held before the next is taken
	Ballast  int           // rows inserted first into faults_ballast (rolled back), to weigh the transaction
	LockWait time.Duration // the crosser's own session innodb_lock_wait_timeout (whole seconds, at least 1)
}

// CrossStats is what a Crosser did.
type CrossStats struct {
	Rounds      int // transactions that took their locks
	OwnConflict int // rounds that lost a deadlock or a lock wait themselves
}

// Run crosses locks round after round until ctx ends, and returns what it did. The error is a failure of the
// database other than a conflict.
func (c *Crosser) Run(ctx context.Context) (CrossStats, error) {
	var st CrossStats
	conn, err := c.DB.Conn(context.WithoutCancel(ctx))
	if err != nil {
		return st, fmt.Errorf("faults: crosser connection: %w", err)
	}
	defer conn.Close()
	if err := c.prepare(ctx, conn); err != nil {
		return st, err
	}
	for ctx.Err() == nil {
		err := c.round(ctx, conn)
		switch {
		case err == nil:
			st.Rounds++
		case isErrorNumber(err, 1213) || isErrorNumber(err, 1205):
			st.OwnConflict++
		case ctx.Err() != nil:
			return st, nil
		default:
			return st, err
		}
	}
	return st, nil
}

func (c *Crosser) prepare(ctx context.Context, conn *sql.Conn) error {
	wait := max(int(c.LockWait/time.Second), 1)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", wait)); err != nil {
		return fmt.Errorf("faults: crosser lock wait timeout: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS faults_ballast
		(id BIGINT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(64) NOT NULL) ENGINE=InnoDB`); err != nil {
		return fmt.Errorf("faults: create faults_ballast: %w", err)
	}
	return nil
}

// round is one transaction: ballast, then each row's lock in descending key order with a hold after each,
// then a rollback (the crosser changes nothing).
func (c *Crosser) round(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("faults: crosser begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := c.ballast(ctx, tx); err != nil {
		return err
	}
	keys := slices.Clone(c.Keys)
	slices.Sort(keys)
	slices.Reverse(keys)
	lock := fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? FOR UPDATE", c.Key, c.Table, c.Key)
	for i, k := range keys {
		var got string
		if err := tx.QueryRowContext(context.WithoutCancel(ctx), lock, k).Scan(&got); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("faults: crosser lock %s %s: %w", c.Table, k, err)
		}
		select {
		case <-ctx.Done():
			if i == len(keys)-1 {
				return nil // every lock was taken: the round counts
			}
			return ctx.Err()
		case <-time.After(c.Hold):
		}
	}
	return nil
}

func (c *Crosser) ballast(ctx context.Context, tx *sql.Tx) error {
	if c.Ballast <= 0 {
		return nil
	}
	values := strings.TrimSuffix(strings.Repeat("('ballast'),", c.Ballast), ",")
	if _, err := tx.ExecContext(ctx, "INSERT INTO faults_ballast (pad) VALUES "+values); err != nil {
		return fmt.Errorf("faults: crosser ballast: %w", err)
	}
	return nil
}

// InnoDBCounters are server-wide InnoDB counters (SHOW GLOBAL STATUS): compare two readings around a fault.
// They count every database on the server.
type InnoDBCounters struct {
	Deadlocks     int64 // Innodb_deadlocks
	RowLockWaits  int64 // Innodb_row_lock_waits
	RowLockTimeMs int64 // Innodb_row_lock_time
}

// ReadInnoDBCounters reads the counters.
func ReadInnoDBCounters(ctx context.Context, db *sql.DB) (InnoDBCounters, error) {
	var c InnoDBCounters
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_deadlocks', 'Innodb_row_lock_waits', 'Innodb_row_lock_time')")
	if err != nil {
		return c, fmt.Errorf("faults: read innodb counters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return c, fmt.Errorf("faults: read innodb counters: %w", err)
		}
		switch strings.ToLower(name) {
		case "innodb_deadlocks":
			c.Deadlocks = v
		case "innodb_row_lock_waits":
			c.RowLockWaits = v
		case "innodb_row_lock_time":
			c.RowLockTimeMs = v
		}
	}
	return c, rows.Err()
}

// Sub is the counters' growth since before.
func (c InnoDBCounters) Sub(before InnoDBCounters) InnoDBCounters {
	return InnoDBCounters{c.Deadlocks - before.Deadlocks, c.RowLockWaits - before.RowLockWaits, c.RowLockTimeMs - before.RowLockTimeMs}
}
