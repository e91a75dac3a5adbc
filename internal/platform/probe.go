package platform

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/workflows"
)

// Probe tells reconciliation whether an order's workflow is gone, with DescribeWorkflowExecution.
type Probe struct{ Client client.Client }

// OrderWorkflowGone reports whether the order's workflow is closed (completed, failed, terminated, timed out,
// cancelled) or unknown to Temporal (never started, or past retention), and the status for the record.
func (p Probe) OrderWorkflowGone(ctx context.Context, orderID string) (bool, string, error) {
	resp, err := p.Client.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(orderID), "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return true, "NOT_FOUND", nil
	}
	if err != nil {
		return false, "", err
	}
	st := resp.GetWorkflowExecutionInfo().GetStatus()
	return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String(), nil
}
