package sqlstore

import (
	"context"
	"errors"
	"fmt"
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
