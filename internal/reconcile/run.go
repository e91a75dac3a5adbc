package reconcile

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/workflows"
)

// RunOnce starts one ReconcileWorkflow now (beside the schedule) and waits for its summary.
func RunOnce(ctx context.Context, c client.Client, in workflows.ReconcileInput) (string, activities.ReconcileSummary, error) {
	id := workflows.ReconcileOnceWorkflowID(time.Now())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             workflows.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.ReconcileWorkflow, in)
	if err != nil {
		return id, activities.ReconcileSummary{}, fmt.Errorf("start reconciliation: %w", err)
	}
	var sum activities.ReconcileSummary
	if err := run.Get(ctx, &sum); err != nil {
		return id, sum, fmt.Errorf("reconciliation %s: %w", id, err)
	}
	return id, sum, nil
}

// Configure gives a worker's activities what reconciliation and the reserve fallback need: the probe of
// order workflows, the metrics (registered on reg) and the fallback switch.
func Configure(a *activities.Activities, c client.Client, reg prometheus.Registerer, cfg Config) error {
	m, err := activities.NewMetrics(reg)
	if err != nil {
		return fmt.Errorf("reconcile metrics: %w", err)
	}
	a.Probe = Probe{Client: c}
	a.Metrics = m
	a.DBFallback = cfg.DBFallback
	return nil
}
