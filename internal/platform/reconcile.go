package platform

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/workflows"
)

// RunOnce starts one ReconcileWorkflow now (beside the schedule) and waits for its result: the stock summary
// and the money summary.
func RunOnce(ctx context.Context, c client.Client, in workflows.ReconcileInput) (string, workflows.ReconcileResult, error) {
	id := workflows.ReconcileOnceWorkflowID(time.Now())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             workflows.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.ReconcileWorkflow, in)
	if err != nil {
		return id, workflows.ReconcileResult{}, fmt.Errorf("start reconciliation: %w", err)
	}
	var sum workflows.ReconcileResult
	if err := run.Get(ctx, &sum); err != nil {
		return id, sum, fmt.Errorf("reconciliation %s: %w", id, err)
	}
	return id, sum, nil
}
