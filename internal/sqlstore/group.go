package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

// Group commit of the deducts of one hot SKU.
//
// Every deduct of a SKU ends in a conditional UPDATE of the SKU's one inventory row, and a row takes one
// transaction at a time: its lock is held for the UPDATE and the COMMIT, so one hot SKU sells at most one
// order per commit. The single-line deducts of a SKU that arrive while one of its transactions runs are
// queued and go together in the next one: one multi-row INSERT of their DEDUCT ledger rows (each its own row,
// UNIQUE per order), one locking read of their RESTORE rows, one multi-row INSERT of their orders and lines,
// one UPDATE of the row by the batch's total, the per-user count of each user of the batch, one COMMIT.
//
// A batch commits only when every one of its orders would have been deducted on its own: no DEDUCT row yet
// (not a retry or a duplicate), no RESTORE row (not compensated first), no order record (not closed first),
// enough stock for all, every user within the limit, the price and limit unchanged. Anything else rolls the
// batch back and runs its orders one at a time through the single-order transaction, in arrival order. So the
// batch's outcome is always the one of its orders deducted one after the other, and every anomaly keeps the
// single-order path's guarantee: a retry answers AlreadyDone, a compensated or closed order is refused, at the
// sold-out boundary the first orders to arrive get the units and the rest SoldOut, one order over its limit
// is refused alone. A batch that finds the SKU out of stock answers SoldOut to all it ran, at once; the orders
// it left out (a retry, compensated first) still go through the single-order path.
//
// An order waits at most for the transaction in flight on its SKU (a few milliseconds) before its own runs; a
// SKU with nothing in flight runs an order at once, alone, through the single-order transaction. Orders of
// several lines always take the single-order transaction, which locks its rows in SKU order; a batch locks one
// inventory row, so the two never wait on each other's rows in a cycle.

// DefaultDeductBatch is the most deducts of one SKU that go in one transaction, unless SetDeductBatch says.
const DefaultDeductBatch = 64

// SetDeductBatch sets the most single-line deducts of one SKU committed together (max <= 1: every deduct in a
// transaction of its own). Call it before the store is used.
func (s *Store) SetDeductBatch(max int) {
	if max <= 1 {
		s.group = nil
		return
	}
	runners := 1
	if s.dialect == schema.MySQL {
		runners = mysqlRunners
	}
	s.group = &groupCommit{s: s, max: max, runners: runners, queues: map[string]*skuQueue{}}
}

// DeductBatchStats counts the group commits since the store was opened.
type DeductBatchStats struct {
	Batches   int64 // transactions of two or more orders that committed
	Batched   int64 // orders deducted in them
	Fallbacks int64 // batches rolled back and run one order at a time (an anomaly, a sold-out boundary, a limit)
	Alone     int64 // orders that found nothing in flight on their SKU and ran alone
}

// DeductBatchStats reports the group commits so far (zero when they are off).
func (s *Store) DeductBatchStats() DeductBatchStats {
	if s.group == nil {
		return DeductBatchStats{}
	}
	g := s.group
	return DeductBatchStats{Batches: g.batches.Load(), Batched: g.batched.Load(), Fallbacks: g.fallbacks.Load(), Alone: g.alone.Load()}
}

type groupCommit struct {
	s       *Store
	max     int
	runners int // per SKU

	mu     sync.Mutex
	queues map[string]*skuQueue // a SKU is here while it has a runner

	batches, batched, fallbacks, alone atomic.Int64
}

// skuQueue is a SKU's deducts waiting for a runner, and how many runners it has.
type skuQueue struct {
	pending []*deductReq
	runners int
}

// mysqlRunners is the most transactions of one SKU's deducts in flight in one store on MySQL: while one holds
// the hot row for its UPDATE and COMMIT, the next writes its orders' rows, as concurrent single-order
// transactions do (with one, a batch's statements all wait for the one before: fewer deducts per second than
// the single-order path at a few buyers at a time). SQLite has one connection and one writer: one runner,
// and the biggest batches.
const mysqlRunners = 4

// deductReq is one single-line deduct waiting for its SKU's runner.
type deductReq struct {
	ctx  context.Context
	in   ordersaga.DeductInput
	done chan deductOutcome // buffered: the runner never blocks on a caller that left
}

type deductOutcome struct {
	res ordersaga.DeductResult
	err error
}

// deduct queues a single-line deduct on its SKU and waits for its outcome.
func (g *groupCommit) deduct(ctx context.Context, in ordersaga.DeductInput) (ordersaga.DeductResult, error) {
	req := &deductReq{ctx: ctx, in: in, done: make(chan deductOutcome, 1)}
	sku := in.Lines[0].SKU
	g.mu.Lock()
	q, ok := g.queues[sku]
	if !ok {
		q = &skuQueue{}
		g.queues[sku] = q
	}
	q.pending = append(q.pending, req)
	spawn := q.runners < g.runners
	if spawn {
		q.runners++
	}
	g.mu.Unlock()
	if spawn {
		go g.run(sku, q)
	}
	select {
	case o := <-req.done:
		return o.res, o.err
	case <-ctx.Done():
		// Still queued: the runner skips it. Already in a transaction: it may commit, and the retry of the
		// deduct answers AlreadyDone, as when a single-order transaction commits after its caller left.
		return ordersaga.DeductResult{}, fmt.Errorf("deduct %s: %w", in.OrderID, ctx.Err())
	}
}

// run is one of the SKU's runners: it takes what is queued, up to max, runs it as one transaction, and again,
// until the queue is empty.
func (g *groupCommit) run(sku string, q *skuQueue) {
	for {
		g.mu.Lock()
		n := min(len(q.pending), g.max)
		if n == 0 {
			if q.runners--; q.runners == 0 {
				delete(g.queues, sku)
			}
			g.mu.Unlock()
			return
		}
		batch := append([]*deductReq(nil), q.pending[:n]...)
		rest := copy(q.pending, q.pending[n:])
		clear(q.pending[rest:]) // the taken requests are not kept alive by the queue
		q.pending = q.pending[:rest]
		g.mu.Unlock()

		live := batch[:0]
		for _, r := range batch {
			if err := r.ctx.Err(); err != nil {
				r.done <- deductOutcome{err: fmt.Errorf("deduct %s: %w", r.in.OrderID, err)}
				continue
			}
			live = append(live, r)
		}
		g.runBatch(live)
	}
}

// errFallback rolls a batch back so that its orders run one at a time.
var errFallback = errors.New("run the batch's orders one at a time")

// errBatchSoldOut rolls back a batch that found its SKU out of stock.
var errBatchSoldOut = errors.New("sold out")

// runBatch deducts the batch's orders and delivers each its outcome.
func (g *groupCommit) runBatch(batch []*deductReq) {
	// An order that is in the batch twice (a redelivered activity) goes once; its repeat runs after the batch,
	// alone, and answers as a retry does.
	seen := make(map[string]bool, len(batch))
	var first, after []*deductReq
	for _, r := range batch {
		if seen[r.in.OrderID] {
			after = append(after, r)
			continue
		}
		seen[r.in.OrderID] = true
		first = append(first, r)
	}
	defer func() {
		for _, r := range after {
			g.one(r)
		}
	}()
	switch len(first) {
	case 0:
		return
	case 1:
		g.alone.Add(1)
		g.one(first[0])
		return
	}
	// The transaction runs for the whole batch: no one caller's cancellation stops it (a caller that left
	// finds its deduct done on its retry). It keeps the first caller's values (its trace).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(first[0].ctx), 30*time.Second)
	defer cancel()
	var (
		taken []*deductReq
		lines []ordersaga.Line
	)
	err := g.s.ledgerTx(ctx, func(tx *gorm.DB) error {
		var err error
		taken, lines, err = g.s.groupTx(tx, first)
		return err
	})
	switch {
	case err == nil:
		g.batches.Add(1)
		g.batched.Add(int64(len(taken)))
		for i, r := range taken {
			l := []ordersaga.Line{lines[i]}
			amount, err := ordersaga.Amount(l) // checked by insertOrders in the transaction
			r.done <- deductOutcome{res: ordersaga.DeductResult{Lines: l, AmountCents: amount}, err: err}
		}
		// The orders the batch left out (a ledger row of theirs exists: a retry, or compensated first) run
		// after it, in arrival order, before the repeats.
		after = append(notIn(first, taken), after...)
	case errors.Is(err, errBatchSoldOut):
		// Sold out to the orders the batch ran, and to them only: one it left out holds its unit already (the
		// retry of a deduct that took the last one) or was compensated first, and the single-order path
		// answers it (AlreadyDone, Compensated), after the others, in arrival order.
		for _, r := range taken {
			r.done <- deductOutcome{err: &ordersaga.SoldOutError{SKU: r.in.Lines[0].SKU}}
		}
		after = append(notIn(first, taken), after...)
	default:
		// errFallback, or the batch's transaction failed (a lost deadlock past its retries, a dropped
		// connection): each order gets its own transaction and its own answer.
		g.fallbacks.Add(1)
		after = append(first, after...)
	}
}

// one runs a deduct in a transaction of its own and delivers its outcome.
func (g *groupCommit) one(r *deductReq) {
	res, err := g.s.deductOne(r.ctx, r.in)
	r.done <- deductOutcome{res, err}
}

// notIn is the requests of all that are not in some, in order.
func notIn(all, some []*deductReq) []*deductReq {
	in := make(map[*deductReq]bool, len(some))
	for _, r := range some {
		in[r] = true
	}
	var out []*deductReq
	for _, r := range all {
		if !in[r] {
			out = append(out, r)
		}
	}
	return out
}

// groupTx is one attempt of a batch's transaction (distinct orders of one SKU). It leaves out the orders that
// have a ledger row of the SKU already (a retry of a committed deduct, an order compensated first: the
// single-order path decides them), deducts the others and returns them with their lines, priced. It returns
// errFallback when an order would not be deducted as the others are, and errBatchSoldOut with the orders it
// ran (the ones left out are not sold out: the single-order path answers them) when the SKU has no unit left.
func (s *Store) groupTx(tx *gorm.DB, batch []*deductReq) ([]*deductReq, []ordersaga.Line, error) {
	now := s.now()
	sku := batch[0].in.Lines[0].SKU
	ids := make([]any, len(batch))
	for i, r := range batch {
		ids[i] = r.in.OrderID
	}
	known, err := s.ledgerOrders(tx, sku, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: read ledger: %w", sku, err)
	}
	if len(known) > 0 {
		skip := make(map[string]bool, len(known))
		for _, id := range known {
			skip[id] = true
		}
		var rest []*deductReq
		for _, r := range batch {
			if !skip[r.in.OrderID] {
				rest = append(rest, r)
			}
		}
		batch = rest
		if len(batch) == 0 {
			return nil, nil, nil
		}
		ids = ids[:0]
		for _, r := range batch {
			ids = append(ids, r.in.OrderID)
		}
	}
	var total int64
	for _, r := range batch {
		total += r.in.Lines[0].Qty
	}

	// The DEDUCT rows, each its own: a duplicate now (a deduct of one of these orders committed since the
	// read above) is decided by the single-order path.
	entries := make([]ledgerEntry, len(batch))
	for i, r := range batch {
		entries[i] = ledgerEntry{r.in.OrderID, sku, r.in.Lines[0].Qty}
	}
	if err := s.insertLedger(tx, OpDeduct, now, entries...); err != nil {
		if isDuplicate(err) {
			return nil, nil, errFallback
		}
		return nil, nil, fmt.Errorf("deduct batch of %s: ledger: %w", sku, err)
	}
	// A RESTORE row of an order (compensated before its deduct: the hanging anomaly) refuses that order; the
	// locking read waits for a restore committing right now, as the single-order path's does. SQLite needs no
	// second read: this transaction is its only writer since BEGIN IMMEDIATE, so the read above saw every
	// RESTORE row there is (and left those orders out).
	var restored []string
	if s.dialect == schema.MySQL {
		if err := tx.Raw("SELECT order_id FROM stock_ledger WHERE sku = ? AND op = ? AND order_id IN ("+marks(len(batch))+")"+s.forUpdate(),
			append([]any{sku, OpRestore}, ids...)...).Scan(&restored).Error; err != nil {
			return nil, nil, fmt.Errorf("deduct batch of %s: check restores: %w", sku, err)
		}
	}
	if len(restored) > 0 {
		return nil, nil, errFallback
	}
	var terms []saleTerms
	if err := tx.Raw("SELECT price_cents, per_user_limit FROM inventory WHERE sku = ?", sku).Scan(&terms).Error; err != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: price: %w", sku, err)
	}
	if len(terms) == 0 {
		return nil, nil, errFallback // each order answers UnknownSKU
	}
	price, limit := terms[0].PriceCents, terms[0].PerUserLimit

	// The orders and their lines; an order already recorded was closed before its deduct and is refused.
	lines := make([]ordersaga.Line, len(batch))
	recs := make([]ordersaga.OrderRecord, len(batch))
	for i, r := range batch {
		lines[i] = r.in.Lines[0]
		lines[i].UnitPriceCents = price
		recs[i] = ordersaga.OrderRecord{
			OrderID: r.in.OrderID, UserID: r.in.UserID, Status: ordersaga.StatusAwaitingPayment,
			Currency: r.in.Currency, PayBy: &r.in.PayBy, Lines: lines[i : i+1],
		}
	}
	if err := s.insertOrders(tx, recs, now); err != nil {
		if isDuplicate(err) {
			return nil, nil, errFallback
		}
		return nil, nil, fmt.Errorf("deduct batch of %s: orders: %w", sku, err)
	}

	// The hot row, last: its lock is held for this UPDATE, the per-user counts and the COMMIT.
	res := tx.Exec("UPDATE inventory SET stock = stock - ?, updated_at = ? WHERE sku = ? AND stock >= ? AND price_cents = ? AND per_user_limit = ?",
		total, now, sku, total, price, limit)
	if res.Error != nil {
		return nil, nil, fmt.Errorf("deduct batch of %s: update: %w", sku, res.Error)
	}
	if res.RowsAffected == 0 {
		var rows []struct {
			Stock        int64
			PriceCents   int64
			PerUserLimit int64
		}
		if err := tx.Raw("SELECT stock, price_cents, per_user_limit FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&rows).Error; err != nil {
			return nil, nil, fmt.Errorf("deduct batch of %s: stock: %w", sku, err)
		}
		if len(rows) == 1 && rows[0].Stock == 0 && rows[0].PriceCents == price && rows[0].PerUserLimit == limit {
			return batch, nil, errBatchSoldOut
		}
		return nil, nil, errFallback // not enough for all (the first to arrive get it), or repriced
	}
	if limit > 0 {
		// Each user's units of the batch together: within the limit together means within it one by one.
		var users []string
		units := map[string]int64{}
		for _, r := range batch {
			if _, ok := units[r.in.UserID]; !ok {
				users = append(users, r.in.UserID)
			}
			units[r.in.UserID] += r.in.Lines[0].Qty
		}
		for _, u := range users {
			if err := s.addUserUnits(tx, sku, u, units[u], limit); err != nil {
				var over *ordersaga.LimitExceededError
				if errors.As(err, &over) {
					return nil, nil, errFallback
				}
				return nil, nil, fmt.Errorf("deduct batch of %s: %w", sku, err)
			}
		}
	}
	return batch, lines, nil
}

// ledgerOrders is the orders among ids (strings) that have a ledger row of sku, DEDUCT or RESTORE. On SQLite
// the IDs go as one JSON array, each looked up in the ledger's unique index (order_id, sku, op): an IN list
// builds a temporary B-tree of its values (with a pager and page cache of its own) in every run of the
// statement, and the read took 10 % of the CPU of a hot SKU's group commit against 3 % this way (BENCHMARKS.md,
// "Group commit of a hot SKU's deducts"). CROSS JOIN keeps the array the outer loop (SQLite does not reorder it).
func (s *Store) ledgerOrders(tx *gorm.DB, sku string, ids []any) ([]string, error) {
	var q *gorm.DB
	if s.dialect == schema.SQLite {
		list, err := json.Marshal(ids)
		if err != nil {
			return nil, err
		}
		q = tx.Raw("SELECT l.order_id FROM json_each(?) j CROSS JOIN stock_ledger l ON l.order_id = j.value AND l.sku = ?", string(list), sku)
	} else {
		q = tx.Raw("SELECT order_id FROM stock_ledger WHERE sku = ? AND order_id IN ("+marks(len(ids))+")", append([]any{sku}, ids...)...)
	}
	var known []string
	if err := q.Scan(&known).Error; err != nil {
		return nil, err
	}
	return known, nil
}

// marks is n comma-separated placeholders.
func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// insertRows inserts n rows into table in one statement, each with a value for every column of cols, appended
// to args by row(i, args). A row that breaks a constraint (a duplicate: isDuplicate) fails the statement, and:
//   - one row: the statement alone; the caller's transaction goes on (a deduct and a restore decide a
//     duplicate of their one ledger row in the same transaction);
//   - several rows on SQLite: the caller's whole transaction, rolled back (INSERT OR ROLLBACK). A plain
//     several-row INSERT inside a transaction writes a statement journal (a copy of each page it changes, so
//     that a constraint error undoes that statement alone), and that journal took a third of the CPU of a hot
//     SKU's group commit on SQLite; OR ROLLBACK needs none. Every caller of several rows returns the error and
//     ends its transaction anyway; one that must go on after a failure inserts its rows one at a time.
//
// On MySQL several rows fail the statement alone, as one does.
func (s *Store) insertRows(tx *gorm.DB, table string, cols []string, n int, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	args := make([]any, 0, len(cols)*n)
	for i := range n {
		args = row(i, args)
	}
	if len(args) != len(cols)*n {
		return fmt.Errorf("insert into %s: %d values for %d rows of %d columns", table, len(args), n, len(cols))
	}
	if n > 1 && s.dialect == schema.SQLite {
		q, args := sqliteRowsInsert(table, cols, n, args)
		return tx.Exec(q, args...).Error
	}
	return tx.Exec("INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES "+values(n, len(cols)), args...).Error
}

// values is n rows of cols placeholders each, for a multi-row INSERT.
func values(n, cols int) string {
	row := "(" + marks(cols) + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

// sqliteRowsInsert is the INSERT OR ROLLBACK of n rows of cols (args, row after row) on SQLite, with each value
// that is the same in every row (a batch's time, status, SKU) bound once, as a numbered placeholder (?1, ?2,
// …) that every row repeats: modernc.org/sqlite binds each placeholder by searching the argument list from its
// start, so a statement of p placeholders costs p²/2 steps, 16 % of the CPU of a hot SKU's group commit with
// every value its own placeholder (BENCHMARKS.md, "Group commit of a hot SKU's deducts"). The shared columns
// come first in the column list, so that SQLite numbers them before the rows' own placeholders (a plain ?
// takes the number after the largest one so far).
func sqliteRowsInsert(table string, cols []string, n int, args []any) (string, []any) {
	w := len(cols)
	var shared, own []int // column indexes
	for c := range w {
		if sameInEveryRow(args, w, n, c) {
			shared = append(shared, c)
		} else {
			own = append(own, c)
		}
	}
	var q strings.Builder
	q.WriteString("INSERT OR ROLLBACK INTO " + table + " (")
	for i, c := range slices.Concat(shared, own) {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(cols[c])
	}
	q.WriteString(") VALUES ")
	row := make([]string, 0, w)
	for i := range shared {
		row = append(row, "?"+strconv.Itoa(i+1))
	}
	for range own {
		row = append(row, "?")
	}
	one := "(" + strings.Join(row, ", ") + ")"
	q.WriteString(strings.TrimSuffix(strings.Repeat(one+", ", n), ", "))

	out := make([]any, 0, len(shared)+len(own)*n)
	for _, c := range shared {
		out = append(out, args[c])
	}
	for r := range n {
		for _, c := range own {
			out = append(out, args[r*w+c])
		}
	}
	return q.String(), out
}

// sameInEveryRow reports whether column c of the n rows of w values in args holds one value: equal under ==
// (so a time with another location or monotonic reading, or another pointer, is another value), of a type
// that can be compared.
func sameInEveryRow(args []any, w, n, c int) bool {
	v := args[c]
	if v != nil && !reflect.TypeOf(v).Comparable() {
		return false
	}
	for r := 1; r < n; r++ {
		if args[r*w+c] != v {
			return false
		}
	}
	return true
}
