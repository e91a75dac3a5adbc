package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ordersaga/ordersaga/schema"
)

// Store is the database layer (MySQL in production, SQLite in the embedded local stack and tests without
// MYSQL_DSN): inventory, the stock ledger, orders and payments. The database is the truth about stock.
type Store struct {
	db      *gorm.DB
	dialect string
	now     func() time.Time
	group   *groupCommit // nil: every deduct in a transaction of its own (SetDeductBatch)
}

// Open opens MySQL when mysqlDSN is set, else SQLite at sqlitePath (created if missing), and applies the
// schema migrations. MySQL gets the default Pool.
func Open(ctx context.Context, mysqlDSN, sqlitePath string) (*Store, error) {
	return OpenWithPool(ctx, mysqlDSN, sqlitePath, Pool{})
}

// Pool sizes MySQL's connection pool; a zero field keeps its default. SQLite always has one connection.
type Pool struct {
	MaxOpenConns    int           // default 64
	MaxIdleConns    int           // default 64 (at most MaxOpenConns); negative: none kept idle
	ConnMaxLifetime time.Duration // default 30m
}

// OpenWithPool is Open with MySQL's pool sized by pool (MYSQL_MAX_OPEN_CONNS and the like).
func OpenWithPool(ctx context.Context, mysqlDSN, sqlitePath string, pool Pool) (*Store, error) {
	if pool.MaxOpenConns <= 0 {
		pool.MaxOpenConns = 64
	}
	if pool.MaxIdleConns == 0 {
		pool.MaxIdleConns = min(64, pool.MaxOpenConns)
	}
	if pool.ConnMaxLifetime <= 0 {
		pool.ConnMaxLifetime = 30 * time.Minute
	}
	var (
		db      *gorm.DB
		dialect string
		err     error
	)
	cfg := &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true}
	if mysqlDSN != "" {
		dsn, perr := mysql.ParseDSN(mysqlDSN)
		if perr != nil {
			return nil, fmt.Errorf("open db: MYSQL_DSN: %w", perr)
		}
		dsn.ParseTime = true
		dsn.Loc = time.UTC
		if dsn.Params == nil {
			dsn.Params = map[string]string{}
		}
		dsn.Params["time_zone"] = "'+00:00'"
		dialect = schema.MySQL
		db, err = gorm.Open(gormmysql.Open(dsn.FormatDSN()), cfg)
		if err == nil {
			sqlDB, _ := db.DB()
			sqlDB.SetMaxOpenConns(pool.MaxOpenConns)
			sqlDB.SetMaxIdleConns(pool.MaxIdleConns)
			sqlDB.SetConnMaxLifetime(pool.ConnMaxLifetime)
		}
	} else {
		if sqlitePath == "" {
			return nil, errors.New("open db: neither MYSQL_DSN nor a SQLite path is set")
		}
		if dir := filepath.Dir(sqlitePath); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("open db: %w", err)
			}
		}
		dialect = schema.SQLite
		dsn := "file:" + sqlitePath + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
			"&_pragma=synchronous(NORMAL)&_txlock=immediate&_time_format=sqlite"
		pinSQLiteMemory()
		conns := sql.OpenDB(&stmtCacheConnector{drv: &msqlite.Driver{}, dsn: dsn, size: stmtCacheSize})
		db, err = gorm.Open(sqlite.New(sqlite.Config{Conn: conns}), cfg)
		if err == nil {
			// One writer at a time is SQLite's model; a single connection makes that explicit and keeps
			// BEGIN IMMEDIATE from spinning on busy timeouts under load.
			sqlDB, _ := db.DB()
			sqlDB.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open db: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open db: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open db: ping: %w", err)
	}
	if err := schema.Migrate(ctx, sqlDB, dialect); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open db: %w", err)
	}
	s := &Store{db: db, dialect: dialect, now: func() time.Time { return time.Now().UTC() }}
	s.SetDeductBatch(DefaultDeductBatch)
	return s, nil
}

// Dialect is schema.MySQL or schema.SQLite.
func (s *Store) Dialect() string { return s.dialect }

// DB returns the GORM handle (tests and reconciliation read with it).
func (s *Store) DB() *gorm.DB { return s.db }

// Ping checks the database is reachable.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// SetClock sets the clock the store stamps its rows with and reads "now" from (tests age rows with it).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Close closes the connection pool.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// forUpdate is the locking-read suffix: MySQL needs it so a check sees rows that a concurrent transaction is
// committing; SQLite has one writer at a time and no such clause.
func (s *Store) forUpdate() string {
	if s.dialect == schema.MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// inTx runs fn in a transaction and runs it again when it lost a deadlock (1213), a lock wait (1205) or
// SQLite's busy lock, a few times with jitter; after that the conflict is returned for the caller's retry.
func (s *Store) inTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.runTx(ctx, nil, fn)
}

// ledgerTx is inTx for the transactions that write stock_ledger or decide from it under the order's row lock
// (Deduct, Restore, CloseOrder, CloseUnpaid, MarkPaid), pinned to REPEATABLE READ on MySQL whatever the
// server's or the session's default. Their tombstone rule needs it: Restore's locking read of a DEDUCT row
// that does not exist yet takes a gap lock that a concurrent Deduct's INSERT must wait for; under READ
// COMMITTED there is no gap lock, and a restore and a late deduct of one order could both commit (the
// deducted units never given back). MarkPaid's own rule (lock the order's row, then read its RESTORE rows)
// holds at either level, but it is one of the row-lock rules and runs at the level they were reasoned at.
// RecordPayment is not here: it is one INSERT, decided by the unique key alone.
// SQLite runs one writer at a time, which is stricter still.
func (s *Store) ledgerTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.dialect != schema.MySQL {
		return s.runTx(ctx, nil, fn)
	}
	return s.runTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead}, fn)
}

func (s *Store) runTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *gorm.DB) error) error {
	var err error
	for attempt := 0; attempt < 6; attempt++ {
		err = s.db.WithContext(ctx).Transaction(fn, opts)
		if err == nil || !isConflict(err) {
			return err
		}
		backoff := time.Duration(1<<attempt)*5*time.Millisecond + time.Duration(rand.IntN(5))*time.Millisecond
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(backoff):
		}
	}
	return fmt.Errorf("%w: %w", errRetryTx, err)
}

// isDuplicate reports a unique-key violation.
func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return errors.Is(err, gorm.ErrDuplicatedKey)
}

// errRunAgain is returned from inside a transaction that met a concurrent write it must see under a lock
// (two first inserts of one row): the transaction runs again, like after a deadlock.
// errRetryTx marks a transaction that lost a deadlock or a lock wait and can simply run again.
var errRetryTx = errors.New("transaction conflict")

var errRunAgain = errors.New("concurrent first write: run the transaction again")

// isConflict reports an error after which the same transaction can simply run again.
func isConflict(err error) bool {
	if errors.Is(err, errRunAgain) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return strings.Contains(err.Error(), "database is locked")
}

// IsCheckViolation reports a CHECK constraint failure (MySQL 3819/4025 on MariaDB, SQLite CONSTRAINT_CHECK).
func IsCheckViolation(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 3819 || me.Number == 4025
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_CHECK
	}
	return false
}

// Widths of the free-text columns (characters: MySQL counts VARCHAR in characters). A longer text would fail
// its statement on a strict-mode MySQL, for ever on every retry, so the store cuts every free text it writes.
const (
	closedReasonChars       = 255 // orders.closed_reason
	paymentDetailChars      = 255 // payments.detail
	refundRefChars          = 255 // payments.refund_ref
	anomalyDetailChars      = 512 // stock_anomalies.detail
	moneySubjectChars       = 255 // money_anomalies.subject
	moneyAnomalyDetailChars = 512 // money_anomalies.detail
)

// clip makes s fit a free-text column of n characters: valid UTF-8 (each run of invalid bytes becomes
// U+FFFD, which a strict-mode MySQL would otherwise refuse with 1366 "Incorrect string value", for ever on
// every retry), cut to at most n characters on a rune boundary. Callers log the whole text where it matters.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n { // bytes >= runes: short enough
		return s
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
