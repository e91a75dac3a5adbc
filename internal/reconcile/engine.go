package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Summary is what one reconciliation run found and did (the workflow's result).
type Summary struct {
	SKUs       int   // SKUs checked
	Drifted    int   // SKUs whose counter differed from the truth (missing counters included)
	DriftUnits int64 // Σ |redis.available − truth| over the loaded counters
	OverUnits  int64 // the part where Redis promised more than the truth
	UnderUnits int64 // the part where Redis promised less

	AvailRepaired int // counters set to the truth
	Loaded        int // missing counters loaded
	Raced         int // SKUs whose counter could not be compared-and-set because Redis kept moving
	Rebalanced    int // split SKUs whose shards were split evenly again, their sum in line (not drift)

	StrayHolds         int
	MarkersWithoutHold int
	HoldsConfirmed     int
	HoldsReleased      int
	LeakedOrders       int
	LeakedUnits        int64
	Resynced           int
	UserUnitsFixed     int // orders added to or dropped from a user's count of a SKU with a per-user limit
	LeftAlone          int // holds and orders left alone: younger than the grace period, or their workflow runs
	Anomalies          int // rows written to stock_anomalies
}

// Add adds another summary's counts.
func (s *Summary) Add(o Summary) {
	s.SKUs += o.SKUs
	s.Drifted += o.Drifted
	s.DriftUnits += o.DriftUnits
	s.OverUnits += o.OverUnits
	s.UnderUnits += o.UnderUnits
	s.AvailRepaired += o.AvailRepaired
	s.Loaded += o.Loaded
	s.Raced += o.Raced
	s.Rebalanced += o.Rebalanced
	s.StrayHolds += o.StrayHolds
	s.MarkersWithoutHold += o.MarkersWithoutHold
	s.HoldsConfirmed += o.HoldsConfirmed
	s.HoldsReleased += o.HoldsReleased
	s.LeakedOrders += o.LeakedOrders
	s.LeakedUnits += o.LeakedUnits
	s.Resynced += o.Resynced
	s.LeftAlone += o.LeftAlone
	s.Anomalies += o.Anomalies
	s.UserUnitsFixed += o.UserUnitsFixed
}

// Repairs counts every change the run made.
func (s Summary) Repairs() int {
	return s.AvailRepaired + s.Loaded + s.StrayHolds + s.MarkersWithoutHold + s.HoldsConfirmed + s.HoldsReleased + s.LeakedOrders +
		s.UserUnitsFixed
}

func (s Summary) String() string {
	return fmt.Sprintf("skus=%d drifted=%d drift_units=%d (over %d, under %d) repairs=%d: avail_set=%d loaded=%d "+
		"stray_holds=%d markers_without_hold=%d holds_confirmed=%d holds_released=%d leaked_orders=%d (%d units) "+
		"resynced=%d user_units_fixed=%d raced=%d rebalanced=%d left_alone=%d anomalies=%d",
		s.SKUs, s.Drifted, s.DriftUnits, s.OverUnits, s.UnderUnits, s.Repairs(), s.AvailRepaired, s.Loaded,
		s.StrayHolds, s.MarkersWithoutHold, s.HoldsConfirmed, s.HoldsReleased, s.LeakedOrders, s.LeakedUnits,
		s.Resynced, s.UserUnitsFixed, s.Raced, s.Rebalanced, s.LeftAlone, s.Anomalies)
}

// OrderProbe tells whether an order's workflow has ended. Reconciliation only touches an order the database
// shows open, or a hold, once its workflow is gone.
type OrderProbe interface {
	// OrderWorkflowGone reports whether the order's workflow is closed or unknown, and its status for the record.
	OrderWorkflowGone(ctx context.Context, orderID string) (gone bool, status string, err error)
}

// Reconciler compares Redis with the database and repairs Redis to the database's truth (docs/design.md: the
// DB wins). Every write is a Lua script that re-checks what it was computed from, so it never races an order.
type Reconciler struct {
	Redis *redisstock.Store
	Store *sqlstore.Store
	Probe OrderProbe // nil: no order is ever treated as gone
	Log   Logger     // nil: no log
	// Grace: holds and open orders younger than this are left alone (their workflow may be about to act).
	Grace time.Duration
	RunID string
}

// maxCASAttempts bounds the compare-and-set retries of one counter in one run.
const maxCASAttempts = 3

// Logger is what the Reconciler logs to: Temporal's activity logger or a *slog.Logger.
type Logger interface {
	Warn(msg string, keyvals ...any)
}

func (r *Reconciler) logger() Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// SKU reconciles one SKU: per-order fixes of holds and markers first, then the counter. resync is the SKU's
// re-sync mark.
func (r *Reconciler) SKU(ctx context.Context, sku string, resync sqlstore.Resync) (Summary, []sqlstore.Anomaly, error) {
	sum := Summary{SKUs: 1}
	var found []sqlstore.Anomaly
	note := func(a sqlstore.Anomaly) {
		a.RunID, a.SKU = r.RunID, sku
		found = append(found, a)
	}
	n, err := shardsOf(ctx, r.Store, sku)
	if err != nil {
		return sum, found, err
	}
	for i := range n {
		if err := r.fixHolds(ctx, sku, redisstock.ShardName(sku, i), &sum, note); err != nil {
			return sum, found, err
		}
	}
	if err := r.fixAvail(ctx, sku, resync, &sum, note); err != nil {
		return sum, found, err
	}
	if n > 1 {
		// A split SKU's per-user counts are the database's alone (redisstock/shards.go).
		sum.Anomalies = len(found)
		return sum, found, nil
	}
	if err := r.fixUserUnits(ctx, sku, &sum, note); err != nil {
		return sum, found, err
	}
	sum.Anomalies = len(found)
	return sum, found, nil
}

// fixHolds makes the holds hash and the 'H' markers of one shard of the SKU agree (shard: the SKU itself when
// its stock is not split), then ends the old holds of orders that are closed, deducted or unknown.
func (r *Reconciler) fixHolds(ctx context.Context, sku, shard string, sum *Summary, note func(sqlstore.Anomaly)) error {
	markers, err := r.Redis.Markers(ctx, shard)
	if err != nil {
		return err
	}
	raw, err := r.Redis.RawHolds(ctx, shard)
	if err != nil {
		return err
	}
	live := map[string]string{} // order -> 'H' marker, for holds that agree with their marker
	for _, order := range slices.Sorted(maps.Keys(raw)) {
		m := markers[order].Value
		if strings.HasPrefix(m, "H:") {
			live[order] = m
			continue
		}
		done, err := r.Redis.RepairHold(ctx, shard, order, redisstock.HoldDrop, m, raw[order])
		if err != nil {
			return err
		}
		if done {
			sum.StrayHolds++
			note(sqlstore.Anomaly{OrderID: order, Kind: sqlstore.KindStrayHold, Observed: parseQty(raw[order]), Action: sqlstore.ActionDropped,
				Detail: fmt.Sprintf("hold %q with marker %q", raw[order], m)})
		}
	}
	for _, order := range slices.Sorted(maps.Keys(markers)) {
		m := markers[order].Value
		if _, held := raw[order]; held || !strings.HasPrefix(m, "H:") {
			continue
		}
		done, err := r.Redis.RepairHold(ctx, shard, order, redisstock.HoldReadd, m, "")
		if err != nil {
			return err
		}
		if done {
			sum.MarkersWithoutHold++
			live[order] = m
			note(sqlstore.Anomaly{OrderID: order, Kind: sqlstore.KindMarkerWithoutHold, Observed: parseQty(m[2:]), Action: sqlstore.ActionHoldReadded,
				Detail: "marker " + m + " had no hold"})
		}
	}

	var old []string
	for _, order := range slices.Sorted(maps.Keys(live)) {
		if markers[order].Age >= r.Grace {
			old = append(old, order)
		} else {
			sum.LeftAlone++
		}
	}
	if len(old) == 0 {
		return nil
	}
	facts, err := r.Store.OrderFacts(ctx, sku, old)
	if err != nil {
		return err
	}
	for _, order := range old {
		m, f := live[order], facts[order]
		var action redisstock.HoldAction
		var kind, detail string
		switch {
		case f.Standing():
			action, kind = redisstock.HoldConfirm, sqlstore.KindHoldDeducted
			detail = fmt.Sprintf("order %s: DB deduct of %d stands", f.Status, f.Deducted)
		case f.Status.Final():
			action, kind = redisstock.HoldRelease, sqlstore.KindHoldClosedOrder
			detail = fmt.Sprintf("order %s, no standing deduct", f.Status)
		case f.Status == "":
			gone, wf, err := r.gone(ctx, order)
			if err != nil {
				return err
			}
			if !gone {
				sum.LeftAlone++
				continue
			}
			action, kind = redisstock.HoldRelease, sqlstore.KindHoldUnknownOrder
			detail = "order not in the database; workflow " + wf
		default:
			// Open in the database with its deduct restored: a compensation in progress, or a leaked order
			// that the leak pass closes (restore, then release, then record).
			sum.LeftAlone++
			continue
		}
		done, err := r.Redis.RepairHold(ctx, shard, order, action, m, m[2:])
		if err != nil {
			return err
		}
		if !done {
			continue // the order moved on by itself
		}
		act := sqlstore.ActionReleased
		if action == redisstock.HoldConfirm {
			act = sqlstore.ActionConfirmed
			sum.HoldsConfirmed++
		} else {
			sum.HoldsReleased++
		}
		note(sqlstore.Anomaly{OrderID: order, Kind: kind, Observed: parseQty(m[2:]), Action: act, Detail: detail})
	}
	return nil
}

func (r *Reconciler) gone(ctx context.Context, orderID string) (bool, string, error) {
	if r.Probe == nil {
		return false, "", nil
	}
	gone, status, err := r.Probe.OrderWorkflowGone(ctx, orderID)
	if err != nil {
		return false, "", fmt.Errorf("probe order %s: %w", orderID, err)
	}
	return gone, status, nil
}

// fixAvail compares the counter with the truth and sets it with a compare-and-set, retrying when Redis moved.
func (r *Reconciler) fixAvail(ctx context.Context, sku string, mark sqlstore.Resync, sum *Summary, note func(sqlstore.Anomaly)) error {
	resync := mark != sqlstore.ResyncNone
	var res redisstock.AvailRepair
	for attempt := 1; ; attempt++ {
		var err error
		res, err = measureAndRepair(ctx, r.Redis, r.Store, sku, redisstock.ModeRepair)
		if errors.Is(err, ordersaga.ErrUnknownSKU) {
			return nil // deleted since the page was read
		}
		if err != nil {
			return err
		}
		if res.Code != redisstock.Raced || attempt == maxCASAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
	drift := res.Before - res.Target
	kind := sqlstore.KindAvailOver
	if drift < 0 {
		kind = sqlstore.KindAvailUnder
	}
	if resync {
		kind = sqlstore.KindResync
	}
	switch res.Code {
	case redisstock.InLine:
	case redisstock.Loaded:
		sum.Drifted++
		sum.Loaded++
		k := sqlstore.KindNotLoaded
		if resync {
			k = sqlstore.KindResync
		}
		note(sqlstore.Anomaly{Kind: k, Expected: i64(res.Target), Action: sqlstore.ActionLoaded, Detail: "counter was missing"})
	case redisstock.Raced:
		// Redis changed while the truth was read, on every attempt: what was seen may be an order in flight,
		// not drift, so it is neither counted as drift nor written down; the next run looks again.
		sum.Raced++
		r.logger().Warn("reconcile: counter kept moving under the compare-and-set; left for the next run",
			"sku", sku, "attempts", maxCASAttempts, "seen_drift", drift)
		return nil
	case redisstock.Repaired:
		if drift == 0 && !resync {
			sum.Rebalanced++ // a split SKU's shards evened out, their sum in line: not drift
			break
		}
		sum.Drifted++
		sum.DriftUnits += abs(drift)
		if drift > 0 {
			sum.OverUnits += drift
		} else {
			sum.UnderUnits -= drift
		}
		sum.AvailRepaired++
		note(sqlstore.Anomaly{Kind: kind, Expected: i64(res.Target), Observed: i64(res.Before), Action: sqlstore.ActionSetAvail,
			Detail: fmt.Sprintf("drift %+d", drift)})
	}
	if mark == sqlstore.ResyncClear {
		sum.Resynced++
		note(sqlstore.Anomaly{Kind: sqlstore.KindResync, Expected: i64(res.Target), Action: sqlstore.ActionResynced,
			Detail: "counter in line with the database after the Redis-down fallback"})
	}
	return nil
}

// measureAndRepair is one compare-and-set of a SKU's counter:
//  1. the ledger watermark (highest row ID of the SKU), read first;
//  2. the Redis snapshot (counter, holds and version, one MULTI);
//  3. the database snapshot: db.stock, the ledger rows of the held orders and every row above the watermark,
//     and the orders restored but maybe not released yet;
//  4. repair_avail.lua recomputes the target from the holds and markers as they are when it runs and, in
//     repair mode, writes it only if the counter and the version still equal the snapshot (else: raced).
//
// Why this cannot race an order: an equal version means no reserve, confirm or release of the SKU ran
// between steps 2 and 4, so Redis is exactly as snapshotted. The order events that reach only the database
// in that time are a deduct of a held order and a restore whose release has not run yet; neither moves the
// target (a deduct moves units from "held, still counted by the DB" to "taken by the DB", a restore the
// other way), so the truth read in step 3 is the truth at step 4. An order that reserved before step 2 but
// deducted after the watermark is found by its order ID (its hold is in the snapshot). What the argument
// does not cover is stock that changes in the database alone between steps 3 and 4 (an admin stock change,
// or a deduct on the Redis-down path); such a repair is off by that change until the next run.
func measureAndRepair(ctx context.Context, rs *redisstock.Store, store *sqlstore.Store, sku string, mode redisstock.Mode) (redisstock.AvailRepair, error) {
	n, err := shardsOf(ctx, store, sku)
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	wm, err := store.MaxLedgerID(ctx, sku)
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	snaps, err := rs.SnapshotShards(ctx, sku, n)
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	truth, err := store.ReadSKUTruth(ctx, sku, wm, redisstock.HeldOrders(snaps))
	if err != nil {
		return redisstock.AvailRepair{}, err
	}
	if !truth.Known {
		return redisstock.AvailRepair{}, fmt.Errorf("reconcile %s: %w", sku, ordersaga.ErrUnknownSKU)
	}
	if max(truth.Shards, 1) != n {
		// stock_shards grew since it was read: the snapshots miss the new shards; the next attempt reads them.
		return redisstock.AvailRepair{Code: redisstock.Raced}, nil
	}
	if err := syncShards(ctx, rs, sku, n); err != nil {
		return redisstock.AvailRepair{}, err
	}
	// The per-user limit follows the database too (a cold load finds it missing; an admin's change made while
	// Redis was away is squared here). Written outside the row lock: a change racing it is squared next run.
	if limit, err := rs.Limit(ctx, sku); err != nil {
		return redisstock.AvailRepair{}, err
	} else if limit != truth.PerUserLimit {
		if err := rs.SetLimit(ctx, sku, truth.PerUserLimit); err != nil {
			return redisstock.AvailRepair{}, err
		}
	}
	return rs.RepairStock(ctx, sku, n, mode, truth, snaps)
}

// shardsOf is the SKU's shard count as the database has it (1 when it does not exist: nothing to split).
func shardsOf(ctx context.Context, store *sqlstore.Store, sku string) (int, error) {
	inv, err := store.Inventory(ctx, sku)
	if errors.Is(err, ordersaga.ErrNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return max(inv.StockShards, 1), nil
}

// syncShards writes the SKU's shard count into Redis (the order API reads it there) when Redis says another.
func syncShards(ctx context.Context, rs *redisstock.Store, sku string, n int) error {
	had, err := rs.Shards(ctx, sku)
	if err != nil || had == n {
		return err
	}
	return rs.SetShards(ctx, sku, n)
}

func parseQty(s string) *int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func i64(v int64) *int64 { return &v }
