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
// database's truth, then reconciles the money of the last days (captured = applied + refunded), and returns
// what it found and did. A Temporal Schedule starts it (overlap SKIP); the reconcile command starts one on
// demand.
func ReconcileWorkflow(ctx workflow.Context, in ReconcileInput) (ReconcileResult, error) {
	w := &reconcileWorkflow{in: in, runID: workflow.GetInfo(ctx).WorkflowExecution.ID}
	return w.run(workflow.WithActivityOptions(ctx, reconcileOptions))
}

type reconcileWorkflow struct {
	in      ReconcileInput
	runID   string
	summary activities.ReconcileSummary
	money   activities.MoneySummary
}

func (w *reconcileWorkflow) result() ReconcileResult {
	return ReconcileResult{ReconcileSummary: w.summary, Money: w.money}
}

func (w *reconcileWorkflow) run(ctx workflow.Context) (ReconcileResult, error) {
	// Leaks first: their restore and release then show in the SKU pass as settled, not as drift.
	if err := w.pages(ctx, acts.ReconcileLeaks, "leaked orders"); err != nil {
		return w.result(), err
	}
	if err := w.pages(ctx, acts.ReconcileSKUs, "skus"); err != nil {
		return w.result(), err
	}
	if err := workflow.ExecuteActivity(ctx, acts.ReconcileFinish, w.runID, w.summary).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("publishing the reconciliation summary failed", "error", err)
	}
	// Versioned: a run that was in flight when the money step was deployed finishes without it.
	if workflow.GetVersion(ctx, moneyStepChange, workflow.DefaultVersion, 1) == 1 {
		err := workflow.ExecuteActivity(ctx, acts.ReconcileMoney, activities.ReconcileMoneyInput{
			RunID: w.runID, Days: w.in.moneyDays(), RefundUnsentAfter: w.in.refundUnsentAfter(),
		}).Get(ctx, &w.money)
		if err != nil {
			return w.result(), fmt.Errorf("reconcile money: %w", err)
		}
	}
	return w.result(), nil
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
