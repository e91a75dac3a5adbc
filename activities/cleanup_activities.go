package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ordersaga/ordersaga/internal/retention"
)

// CleanIdempotencyInput is one batch of the idempotency cleanup: rows older than Retention, Limit at most.
type CleanIdempotencyInput struct {
	Retention time.Duration
	Limit     int
}

// IdempotencyCleanBatch is what one batch of the cleanup found and deleted.
type IdempotencyCleanBatch = retention.Batch

// IdempotencyCleanSummary is what one cleanup run deleted (the workflow's result).
type IdempotencyCleanSummary = retention.Summary

// CleanIdempotencyKeys deletes one batch of expired idempotency rows and their markers (retention.Cleaner).
// Safe to run twice: a row or marker already deleted is not found again.
func (a *Activities) CleanIdempotencyKeys(ctx context.Context, in CleanIdempotencyInput) (IdempotencyCleanBatch, error) {
	c := retention.Cleaner{Store: a.Store, Redis: a.Redis, Metrics: a.CleanupMetrics}
	return c.Batch(ctx, in.Retention, in.Limit)
}

// CleanIdempotencyFinish publishes a finished cleanup run: the per-run gauges and one log line.
func (a *Activities) CleanIdempotencyFinish(ctx context.Context, runID string, s IdempotencyCleanSummary) error {
	a.CleanupMetrics.Run(s, float64(time.Now().Unix()))
	activity.GetLogger(ctx).Info("idempotency cleanup finished", "run_id", runID, "batches", s.Batches,
		"rows_deleted", s.Rows, "markers_deleted", s.Markers)
	return nil
}
