package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/activities"
)

// reconcileOptions: a page heartbeats after each item, so a dead worker's page resumes elsewhere within
// the heartbeat timeout; a run that keeps failing fails the workflow (visible in the UI) and the next
// scheduled run starts afresh.
var reconcileOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 10,
	},
}

// ReconcileWorkflow is one reconciliation run (docs/design.md, layer 3): it closes leaked orders (unpaid, their
// workflow gone), then pages through every SKU comparing Redis with the database and repairing Redis to the
// database's truth, and returns what it found and did. A Temporal Schedule starts it (overlap SKIP); the
// reconcile command starts one on demand.
func ReconcileWorkflow(ctx workflow.Context, in ReconcileInput) (activities.ReconcileSummary, error) {
	w := &reconcileWorkflow{in: in, runID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	return w.run(workflow.WithActivityOptions(ctx, reconcileOptions))
}

type reconcileWorkflow struct {
	in      ReconcileInput
	runID   string
	summary activities.ReconcileSummary
}

func (w *reconcileWorkflow) run(ctx workflow.Context) (activities.ReconcileSummary, error) {
	// Leaks first: their restore and release then show in the SKU pass as settled, not as drift.
	if err := w.pages(ctx, acts.ReconcileLeaks, "leaked orders"); err != nil {
		return w.summary, err
	}
	if err := w.pages(ctx, acts.ReconcileSKUs, "skus"); err != nil {
		return w.summary, err
	}
	if err := workflow.ExecuteActivity(ctx, acts.ReconcileFinish, w.runID, w.summary).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("publishing the reconciliation summary failed", "error", err)
	}
	return w.summary, nil
}

// pages runs one paged activity until it reports the last page.
func (w *reconcileWorkflow) pages(ctx workflow.Context, activity any, what string) error {
	after := ""
	for {
		var res activities.ReconcileBatchResult
		err := workflow.ExecuteActivity(ctx, activity, activities.ReconcileBatchInput{
			RunID: w.runID, Grace: w.in.grace(), After: after, Limit: w.in.batch(),
		}).Get(ctx, &res)
		if err != nil {
			return fmt.Errorf("reconcile %s after %q: %w", what, after, err)
		}
		w.summary.Add(res.Summary)
		if res.Done || res.Next == after {
			return nil
		}
		after = res.Next
	}
}
