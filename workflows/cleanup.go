package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/activities"
)

// cleanupOptions: a batch is a few hundred deletes by primary key and one pipelined round trip to Redis; a
// run that keeps failing fails the workflow (visible in the UI) and the next scheduled run starts afresh.
var cleanupOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
	},
}

// IdempotencyCleanupWorkflow is one run of the idempotency records' cleanup: batch after batch, it deletes
// the rows of idempotency_keys unused for the retention whose orders are not open, and their Redis markers,
// until a batch finds fewer expired rows than it may delete (or MaxBatches ran), resting Pause between two
// full batches, then publishes what it deleted. A Temporal Schedule starts it (overlap SKIP).
func IdempotencyCleanupWorkflow(ctx workflow.Context, in IdempotencyCleanupInput) (IdempotencyCleanupResult, error) {
	ctx = workflow.WithActivityOptions(ctx, cleanupOptions)
	var sum IdempotencyCleanupResult
	limit := in.batch()
	for range in.maxBatches() {
		var b activities.IdempotencyCleanBatch
		err := workflow.ExecuteActivity(ctx, acts.CleanIdempotencyKeys, activities.CleanIdempotencyInput{
			Retention: in.retention(), Limit: limit,
		}).Get(ctx, &b)
		if err != nil {
			return sum, fmt.Errorf("clean idempotency keys: %w", err)
		}
		sum.Add(b)
		if b.Expired < limit {
			break
		}
		if p := in.pause(); p > 0 {
			if err := workflow.Sleep(ctx, p); err != nil {
				return sum, err
			}
		}
	}
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	if err := workflow.ExecuteActivity(ctx, acts.CleanIdempotencyFinish, runID, sum).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("publishing the idempotency cleanup summary failed", "error", err)
	}
	return sum, nil
}
