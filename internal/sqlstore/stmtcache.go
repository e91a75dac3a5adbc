package sqlstore

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// A cache of compiled statements for each SQLite connection.
//
// modernc.org/sqlite compiles every statement that database/sql hands it with arguments (Exec, Query) and
// finalizes it after one use. For an in-process database that compile is most of a short statement's cost:
// on a hot SKU's group commit, parsing and freeing statements took a fifth of the CPU (BENCHMARKS.md, "Group
// commit of a hot SKU's deducts"). Each SQLite connection of the store keeps its last stmtCacheSize
// statements with arguments compiled, keyed by their text, and runs them again with new arguments. A
// statement without arguments (a migration's script, BEGIN, a PRAGMA) is not kept: it may be several
// statements in one string, and it is not what repeats.
//
// database/sql uses a connection from one goroutine at a time, so the cache needs no lock. A statement whose
// rows are still open is busy: the same text runs uncached until they are closed. SQLite recompiles a kept
// statement by itself when the schema changed under it.

// stmtCacheSize is the most statements a connection keeps compiled: the store has a few dozen texts, and the
// group commit's INSERTs of its ledger rows, orders and lines have one per batch size (up to
// DefaultDeductBatch) and set of columns its rows share (sqliteRowsInsert: in a batch of one SKU, about two
// each, as the quantities are all 1 or not): about 400, a few MB of compiled programs.
const stmtCacheSize = 512

// sqliteConn is what the store needs of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtCacheConnector opens connections of drv to dsn, each with its statement cache.
type stmtCacheConnector struct {
	drv  driver.Driver
	dsn  string
	size int
}

func (c *stmtCacheConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("statement cache: the driver's connection is a %T, not a modernc.org/sqlite one", conn)
	}
	return &cachingConn{sqliteConn: sc, size: c.size, byText: map[string]*list.Element{}}, nil
}

func (c *stmtCacheConnector) Driver() driver.Driver { return c.drv }

// cachingConn is a SQLite connection that keeps its last size statements with arguments compiled.
type cachingConn struct {
	sqliteConn
	size   int
	byText map[string]*list.Element // of *cachedStmt
	lru    list.List                // most recently used first
	hits   int64
	misses int64
}

type cachedStmt struct {
	text string
	stmt driver.Stmt
	busy bool // its rows are open
}

// stmt is the compiled statement of text, compiled now if it is not kept; nil when it is busy (the caller
// runs text uncached).
func (c *cachingConn) stmt(ctx context.Context, text string) (*cachedStmt, error) {
	if e, ok := c.byText[text]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		c.hits++
		return cs, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	c.misses++
	cs := &cachedStmt{text: text, stmt: st}
	c.byText[text] = c.lru.PushFront(cs)
	for c.lru.Len() > c.size {
		c.evict(c.lru.Back())
	}
	return cs, nil
}

func (c *cachingConn) evict(e *list.Element) {
	cs := e.Value.(*cachedStmt)
	c.lru.Remove(e)
	delete(c.byText, cs.text)
	if !cs.busy {
		cs.stmt.Close()
	}
	// A busy statement is closed by its rows' Close.
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	cs, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	sr, ok := rows.(sqliteRows)
	if !ok {
		return nil, errors.Join(fmt.Errorf("statement cache: the driver's rows are a %T, not modernc.org/sqlite's", rows), rows.Close())
	}
	cs.busy = true
	return &cachedRows{sqliteRows: sr, c: c, cs: cs}, nil
}

// Close finalizes the kept statements, then closes the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for e := c.lru.Front(); e != nil; e = e.Next() {
		if cs := e.Value.(*cachedStmt); !cs.busy {
			errs = append(errs, cs.stmt.Close())
		}
	}
	c.lru.Init()
	clear(c.byText)
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// sqliteRows is what database/sql and GORM use of modernc.org/sqlite's rows (ColumnTypes reads the types).
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows are the rows of a kept statement: closing them frees the statement for its next use (or
// finalizes it, when it was evicted meanwhile).
type cachedRows struct {
	sqliteRows
	c  *cachingConn
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.sqliteRows.Close()
	if r.cs == nil {
		return err
	}
	cs := r.cs
	r.cs = nil
	cs.busy = false
	if e, ok := r.c.byText[cs.text]; !ok || e.Value.(*cachedStmt) != cs {
		err = errors.Join(err, cs.stmt.Close())
	}
	return err
}
