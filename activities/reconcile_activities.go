package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/reconcile"
	"go.temporal.io/sdk/activity"
)

// ReconcileBatchInput is one page of a reconciliation run: SKUs (ReconcileSKUs) or open orders
// (ReconcileLeaks) after the cursor.
type ReconcileBatchInput struct {
	RunID string
	// Grace: holds and orders younger than this are left alone.
	Grace time.Duration
	After string
	Limit int
}

// ReconcileBatchResult is what one page found and did, and where the next page starts.
type ReconcileBatchResult struct {
	Summary ReconcileSummary
	Next    string
	Done    bool
}

// reconcileProgress is a page's heartbeat: a retried attempt resumes after the last item done.
type reconcileProgress struct {
	After   string
	Summary ReconcileSummary
}

func (a *Activities) reconciler(ctx context.Context, in ReconcileBatchInput) *reconcile.Reconciler {
	return &reconcile.Reconciler{Redis: a.Redis, Store: a.Store, Probe: a.Probe, Grace: in.Grace, RunID: in.RunID,
		Log: activity.GetLogger(ctx)}
}

func resume(ctx context.Context, in ReconcileBatchInput) (reconcileProgress, error) {
	p := reconcileProgress{After: in.After}
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
			return reconcileProgress{}, fmt.Errorf("reconcile: heartbeat details: %w", err)
		}
	}
	return p, nil
}

// ReconcileSKUs reconciles one page of SKUs (see Reconciler.SKU), writing each SKU's findings to
// stock_anomalies as it goes and heartbeating after each SKU.
func (a *Activities) ReconcileSKUs(ctx context.Context, in ReconcileBatchInput) (ReconcileBatchResult, error) {
	p, err := resume(ctx, in)
	if err != nil {
		return ReconcileBatchResult{}, err
	}
	page, err := a.Store.SKUPage(ctx, p.After, in.Limit)
	if err != nil {
		return ReconcileBatchResult{}, err
	}
	resync, err := a.Store.ResyncPending(ctx, page, reconcile.ResyncSettle)
	if err != nil {
		return ReconcileBatchResult{}, err
	}
	rec := a.reconciler(ctx, in)
	for _, sku := range page {
		s, found, err := rec.SKU(ctx, sku, resync[sku])
		if werr := a.Store.RecordAnomalies(ctx, found); werr != nil && err == nil {
			err = werr
		}
		if err != nil {
			return ReconcileBatchResult{}, fmt.Errorf("reconcile %s: %w", sku, err)
		}
		a.Metrics.Batch(s, found)
		p.Summary.Add(s)
		p.After = sku
		activity.RecordHeartbeat(ctx, p)
	}
	return ReconcileBatchResult{Summary: p.Summary, Next: p.After, Done: len(page) < in.Limit}, nil
}

// ReconcileLeaks closes one page of leaked orders (see Reconciler.Leaks).
func (a *Activities) ReconcileLeaks(ctx context.Context, in ReconcileBatchInput) (ReconcileBatchResult, error) {
	p, err := resume(ctx, in)
	if err != nil {
		return ReconcileBatchResult{}, err
	}
	rec := a.reconciler(ctx, in)
	base := p.Summary
	s, found, next, done, err := rec.Leaks(ctx, time.Now().UTC(), p.After, in.Limit, func(after string, s ReconcileSummary) {
		hb := reconcileProgress{After: after, Summary: base}
		hb.Summary.Add(s)
		activity.RecordHeartbeat(ctx, hb)
	})
	if err != nil {
		return ReconcileBatchResult{}, fmt.Errorf("reconcile leaked orders: %w", err)
	}
	a.Metrics.Batch(s, found)
	p.Summary.Add(s)
	return ReconcileBatchResult{Summary: p.Summary, Next: next, Done: done}, nil
}

// ReconcileFinish publishes a finished run: the per-run gauges and one log line with the summary.
func (a *Activities) ReconcileFinish(ctx context.Context, runID string, s ReconcileSummary) error {
	a.Metrics.Run(s, float64(time.Now().Unix()))
	logger := activity.GetLogger(ctx)
	args := []any{"run_id", runID, "skus", s.SKUs, "drifted", s.Drifted, "drift_units", s.DriftUnits,
		"repairs", s.Repairs(), "raced", s.Raced, "leaked_orders", s.LeakedOrders, "anomalies", s.Anomalies}
	if s.Repairs() > 0 || s.Raced > 0 {
		logger.Warn("reconciliation repaired drift", args...)
	} else {
		logger.Info("reconciliation found nothing to repair", args...)
	}
	return nil
}

// ReconcileSummary is what one reconciliation run found and did (the workflow's result).
type ReconcileSummary = reconcile.Summary
