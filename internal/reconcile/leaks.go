package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Leaks finds unpaid open orders whose payment deadline passed more than the grace period ago and whose
// workflow is gone, and finishes them with
// CloseGone: the close and the DB restore in one transaction under the order's row lock (a payment that
// commits first wins and nothing is restored), then the Redis release. It pages by order ID, writes each
// order's stock_anomalies rows as it closes it, and returns them too.
// progress, when set, is called after each order with the cursor and the summary so far.
func (r *Reconciler) Leaks(ctx context.Context, now time.Time, after string, limit int,
	progress func(after string, s Summary)) (Summary, []sqlstore.Anomaly, string, bool, error) {
	var sum Summary
	var found []sqlstore.Anomaly
	if r.Probe == nil {
		return sum, nil, "", true, nil
	}
	page, err := r.Store.OpenOrdersBefore(ctx, now.Add(-r.Grace), after, limit)
	if err != nil {
		return sum, nil, after, false, err
	}
	for _, o := range page {
		gone, wf, err := r.gone(ctx, o.OrderID)
		if err != nil {
			return sum, found, after, false, err
		}
		if !gone {
			sum.LeftAlone++
			after = o.OrderID
			if progress != nil {
				progress(after, sum)
			}
			continue
		}
		rows, units, err := r.closeLeaked(ctx, o, wf, now)
		if err == nil {
			err = r.Store.RecordAnomalies(ctx, rows)
		}
		if err != nil {
			return sum, found, after, false, err
		}
		found = append(found, rows...)
		if units > 0 {
			sum.LeakedOrders++
			sum.LeakedUnits += units
		}
		after = o.OrderID
		if progress != nil {
			progress(after, sum)
		}
	}
	sum.Anomalies = len(found)
	return sum, found, after, len(page) < limit, nil
}

func (r *Reconciler) closeLeaked(ctx context.Context, o sqlstore.OpenOrder, wf string, now time.Time) ([]sqlstore.Anomaly, int64, error) {
	status, reason := ordersaga.StatusCancelled, "closed by reconciliation: workflow "+wf
	if o.PayBy != nil && !o.PayBy.After(now) {
		status, reason = ordersaga.StatusExpired, "payment deadline passed; "+reason
	}
	rec, restored, err := CloseGone(ctx, r.Store, r.Redis, o.OrderID, status, reason)
	if err != nil {
		return nil, 0, err
	}
	if rec.Status == ordersaga.StatusPaid {
		// A payment committed before the close took the order's lock: its units stay sold.
		r.logger().Warn("leaked order was paid meanwhile; nothing restored", "order_id", o.OrderID, "workflow", wf)
		return nil, 0, nil
	}
	var rows []sqlstore.Anomaly
	var units int64
	for _, l := range restored {
		detail := "workflow " + wf + ": "
		switch {
		case l.Qty > 0:
			detail += fmt.Sprintf("restored %d", l.Qty)
		case l.Duplicate:
			detail += "already restored"
		default:
			detail += "nothing was deducted (tombstone)"
		}
		units += l.Qty
		rows = append(rows, sqlstore.Anomaly{RunID: r.RunID, SKU: l.SKU, OrderID: o.OrderID, Kind: sqlstore.KindLeakedOrder,
			Expected: i64(0), Observed: i64(l.Qty), Action: sqlstore.ActionRestored, Detail: detail})
	}
	r.logger().Warn("leaked order closed", "order_id", o.OrderID, "workflow", wf, "units_restored", units, "status", string(rec.Status))
	return rows, units, nil
}

// CloseGone closes an unpaid order whose workflow is gone and gives its stock back on both sides: the
// database first (sqlstore.Store.CloseUnpaid: the close and the restore in one transaction under the order's
// row lock, nothing given back when the order is PAID), then the Redis release of every restored line. It is
// the one way both reconciliation's leaked-order repair and a cancel of an order Temporal no longer knows
// finish an order, and it is safe to run again (every step is once-only).
func CloseGone(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, orderID string, status ordersaga.Status, reason string) (ordersaga.OrderRecord, []ordersaga.RestoreLine, error) {
	rec, restored, err := store.CloseUnpaid(ctx, orderID, status, reason)
	if err != nil {
		return ordersaga.OrderRecord{}, nil, err
	}
	for _, l := range restored {
		// The order's own shard count is not recorded, only the SKU's, which can only have grown: a split
		// SKU's release visits every shard (redisstock.ReleaseEveryShard).
		n, err := shardsOf(ctx, store, l.SKU)
		if err == nil && n > 1 {
			_, err = rs.ReleaseEveryShard(ctx, n, orderID, l.SKU, false)
		} else if err == nil {
			_, err = rs.Release(ctx, orderID, rec.UserID, l.SKU)
		}
		if err != nil {
			return ordersaga.OrderRecord{}, nil, fmt.Errorf("close %s: %w", orderID, err)
		}
	}
	return rec, restored, nil
}
