package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
)

// Settle limits: how long the run waits for every order to be final, then for the quiet invariants (Redis
// equal to the database, no holds: reconciliation runs every 10 s with a 10 s grace).
const (
	settleFinal = 4 * time.Minute
	settleQuiet = 2 * time.Minute
)

// result is the RESULT line's figures.
type result struct {
	name     string
	counters map[string]int64
	report   string
	loadTime time.Duration
}

// invariantCounters are the counters that must be zero: the saga's and the refunds' (refundCounters).
// kill_points_never_hit and blackholes_unseen are not the system's: a kill point armed and never reached, or a
// provider blackhole no refund request met, is a run that did not test what it reports.
var invariantCounters = slices.Concat([]string{"oversold", "lost", "duplicate_deducts", "double_refunds", "line_ledger_faults",
	"duplicate_orders", "refused_with_order", "stuck", "drift", "violations", "admission_leaked", "bad_answers", "gave_up", "kill_points_never_hit",
	"blackholes_unseen"},
	refundCounters)

// OK reports whether every invariant counter is zero.
func (r result) OK() bool {
	for _, k := range invariantCounters {
		if r.counters[k] != 0 {
			return false
		}
	}
	return true
}

// Line is the one RESULT line: every counter, sorted by name, after the scenario's name.
func (r result) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT scenario=%s ok=%v load_s=%d", r.name, r.OK(), int64(r.loadTime.Seconds()))
	for _, k := range slices.Sorted(maps.Keys(r.counters)) {
		fmt.Fprintf(&b, " %s=%d", k, r.counters[k])
	}
	return b.String()
}

// verdict settles the run and counts everything.
func (r *runState) verdict(ctx context.Context, expected map[string]int64) (result, error) {
	res := result{name: r.sc.Name, counters: map[string]int64{}}
	c := res.counters
	r.loadCounters(c)
	r.faultCounters(c)
	settleStart := time.Now()
	if err := r.waitFinal(ctx); err != nil {
		return res, err
	}
	rep, err := r.waitQuiet(ctx, expected)
	if err != nil {
		return res, err
	}
	c["settle_ms"] = time.Since(settleStart).Milliseconds()
	res.report = rep.String()
	reportCounters(rep, c)
	if err := r.storeCounters(ctx, c); err != nil {
		return res, err
	}
	if err := r.refundCounts(ctx, c); err != nil {
		return res, err
	}
	refused := r.load.refusedKeys()
	n, err := refusedWithOrder(ctx, refused, r.orderOfKey, r.log)
	if err != nil {
		return res, err
	}
	c["refused_checked"], c["refused_with_order"] = int64(len(refused)), n
	if !res.OK() {
		fmt.Fprintf(r.log, "chaos: invariants after settling:\n%s", res.report)
	}
	return res, nil
}

// reportCounters counts what the invariant check reported: every violation, the oversold SKUs, the drift,
// and the order lines whose ledger breaks orderledger's rule (line_ledger_faults: taken or given back more
// than once, or keeping what their order's status does not; the check of "deducted at most once, given back
// at most once" that can fail, where the row counts of storeCounters cannot).
func reportCounters(rep invariants.Report, c map[string]int64) {
	c["violations"] = int64(len(rep.Violations))
	c["line_ledger_faults"] = int64(len(rep.Lines))
	for _, s := range rep.SKUs {
		if s.PaidUnits+s.AwaitingUnits > s.Expected || s.DBStock < 0 {
			c["oversold"]++
		}
		c["drift"] += abs(s.RedisAvailable-s.DBStock) + s.RedisHolds
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// loadCounters copies the clients' figures.
func (r *runState) loadCounters(c map[string]int64) {
	l := r.load
	c["placed"] = l.c.placed.Load()
	c["accepted"] = l.c.accepted.Load()
	c["sold_out"] = l.c.soldOut.Load()
	c["paid"] = l.c.paid.Load()
	c["pay_refunded"] = l.c.refunded.Load()
	c["pay_rejected_amount"] = l.c.rejectedAmount.Load()
	c["pay_duplicate"] = l.c.duplicate.Load()
	c["cancelled"] = l.c.cancelled.Load()
	c["left_to_expire"] = l.c.expireLeft.Load()
	c["retries"] = l.c.retries.Load()
	c["gave_up"] = l.c.gaveUp.Load()
	c["bad_answers"] = l.c.badAnswers.Load()
	c["duplicate_orders"] = l.duplicateKeys()
}

// faultCounters copies the faults' figures.
func (r *runState) faultCounters(c map[string]int64) {
	never := r.rec.neverHit()
	c["kill_points_never_hit"] = int64(len(never))
	if len(never) > 0 {
		fmt.Fprintf(r.log, "chaos: kill points armed and never hit: %s\n", strings.Join(never, ", "))
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for k, n := range r.rec.injected {
		c["faults_"+k] = n
	}
	for k, n := range r.rec.missedKinds {
		c["missed_"+k] = n
	}
	for k, d := range r.rec.recovery {
		c["recovery_ms_"+k] = d.Milliseconds()
	}
	c["kill_points_missed"] = r.rec.missed
	c["orders_killed"] = int64(len(r.rec.victims))
	for _, n := range r.rec.victims {
		if n > 1 {
			c["orders_killed_again"]++
		}
	}
	c["admission_leaked"] = r.rec.leaked
	c["blackholes_unseen"] = r.rec.blackholesUnseen
}

// waitFinal waits until no order in the database is RESERVING or AWAITING_PAYMENT (what is left is stuck).
func (r *runState) waitFinal(ctx context.Context) error {
	deadline := time.Now().Add(settleFinal)
	for {
		n, err := r.openOrders(ctx)
		if err != nil {
			return err
		}
		if n == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (r *runState) openOrders(ctx context.Context) (int64, error) {
	var n int64
	err := r.t.store.DB().WithContext(ctx).Raw("SELECT COUNT(*) FROM orders WHERE status IN ('RESERVING', 'AWAITING_PAYMENT')").Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count open orders: %w", err)
	}
	return n, nil
}

// waitQuiet checks the invariants with no order in flight until they hold or settleQuiet passes, and
// returns the last report.
func (r *runState) waitQuiet(ctx context.Context, expected map[string]int64) (invariants.Report, error) {
	deadline := time.Now().Add(settleQuiet)
	for {
		rep, err := invariants.Check(ctx, r.t.store, r.t.rs, expected, true)
		if err != nil {
			return rep, fmt.Errorf("invariants: %w", err)
		}
		if rep.OK() || time.Now().After(deadline) {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// storeCounters counts, in the database: orders by final status, stuck orders, accepted orders the database
// does not have, and duplicate ledger rows and payment applications. A second DEDUCT or RESTORE row of one
// line cannot exist (UNIQUE (order_id, sku, op)): duplicate_deducts and the RESTORE half of double_refunds are
// 0 by construction, and line_ledger_faults (reportCounters) is the check of the same property that can fail.
func (r *runState) storeCounters(ctx context.Context, c map[string]int64) error {
	db := r.t.store.DB().WithContext(ctx)
	var byStatus []struct {
		Status string
		N      int64
	}
	if err := db.Raw("SELECT status, COUNT(*) AS n FROM orders GROUP BY status").Scan(&byStatus).Error; err != nil {
		return fmt.Errorf("orders by status: %w", err)
	}
	for _, s := range byStatus {
		c["db_"+strings.ToLower(s.Status)] = s.N
		if s.Status == "RESERVING" || s.Status == "AWAITING_PAYMENT" {
			c["stuck"] += s.N
		}
	}
	queries := map[string]string{
		"duplicate_deducts": "SELECT COUNT(*) FROM (SELECT order_id, sku FROM stock_ledger WHERE op = 'DEDUCT' GROUP BY order_id, sku HAVING COUNT(*) > 1) d",
		"double_refunds": "SELECT (SELECT COUNT(*) FROM (SELECT order_id, sku FROM stock_ledger WHERE op = 'RESTORE' GROUP BY order_id, sku HAVING COUNT(*) > 1) r)" +
			" + (SELECT COUNT(*) FROM (SELECT order_id FROM payments WHERE result = 'applied' GROUP BY order_id HAVING COUNT(*) > 1) p)",
	}
	for k, q := range queries {
		var n int64
		if err := db.Raw(q).Scan(&n).Error; err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		c[k] = n
	}
	return r.countLost(ctx, c)
}

// countLost counts the orders answered 201 that the database does not hold.
func (r *runState) countLost(ctx context.Context, c map[string]int64) error {
	ids := r.load.acceptedIDs()
	for chunk := range slices.Chunk(ids, 500) {
		var n int64
		if err := r.t.store.DB().WithContext(ctx).Raw("SELECT COUNT(*) FROM orders WHERE order_id IN ?", chunk).Scan(&n).Error; err != nil {
			return fmt.Errorf("accepted orders in the database: %w", err)
		}
		c["lost"] += int64(len(chunk)) - n
	}
	return nil
}

// refusedWithOrder counts the keys answered 409 (sold out or over the limit) whose order the database holds
// reserved: a key's answer must be its order, so a buyer told "sold out" must have no order that took units
// (one REJECTED, its reservation refused after the key was claimed, is that answer). orderOf is the status of
// a key's order ("" when the key has no row or its order none).
func refusedWithOrder(ctx context.Context, refused map[string]string, orderOf func(ctx context.Context, user, key string) (ordersaga.Status, string, error), log io.Writer) (int64, error) {
	var n int64
	for _, key := range slices.Sorted(maps.Keys(refused)) {
		status, id, err := orderOf(ctx, refused[key], key)
		if err != nil {
			return n, fmt.Errorf("the order of key %s: %w", key, err)
		}
		if status != "" && status != ordersaga.StatusRejected {
			n++
			fmt.Fprintf(log, "chaos: key %s of %s was answered 409, and the database holds its order %s (%s)\n", key, refused[key], id, status)
		}
	}
	return n, nil
}

// orderOfKey is the status and ID of the order of a user's key in the run's database ("" when none).
func (r *runState) orderOfKey(ctx context.Context, user, key string) (ordersaga.Status, string, error) {
	rec, err := r.t.store.IdempotencyKey(ctx, user, key)
	if errors.Is(err, ordersaga.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	o, err := r.t.store.Order(ctx, rec.OrderID)
	if errors.Is(err, ordersaga.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return o.Status, rec.OrderID, nil
}
