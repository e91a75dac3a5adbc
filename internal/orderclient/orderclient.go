package orderclient

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/workflows"
)

// Place starts the order's workflow (or attaches to the running one: the workflow ID comes from the order
// ID, so a retry never starts a second saga) and waits until its reservation is decided. It starts the order
// as this release runs it: its search attributes given at the start, the confirm inside the deduct.
func Place(ctx context.Context, c client.Client, in workflows.OrderInput) (workflows.Reservation, error) {
	in.ConfirmInDeduct = true
	op := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       workflows.OrderWorkflowID(in.OrderID),
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    workflows.StartSearchAttributes(in),
	}, workflows.OrderWorkflow, in)
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: op,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName:   workflows.UpdateReservation,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return workflows.Reservation{}, fmt.Errorf("place order %s: %w", in.OrderID, err)
	}
	var res workflows.Reservation
	if err := h.Get(ctx, &res); err != nil {
		return workflows.Reservation{}, fmt.Errorf("place order %s: %w", in.OrderID, err)
	}
	return res, nil
}

// Undecided reports an error after which the order's reservation may still be deciding, so placing the same
// input again attaches to the same workflow and gets its answer: the client's wait for the update ended
// (WorkflowUpdateServiceTimeoutOrCanceledError), the server's own wait for it ended (an Update-with-Start
// answers that as the update operation's DeadlineExceeded), the context's deadline passed, or Temporal asked
// to back off (ResourceExhausted: too many updates in flight on the workflow), or the server refused the
// update because the workflow's task has failed twice in a row (WorkflowNotReady: on a worker so loaded that
// its workflow tasks time out, until one completes in time).
func Undecided(err error) bool {
	var (
		updateTimeout *client.WorkflowUpdateServiceTimeoutOrCanceledError
		deadline      *serviceerror.DeadlineExceeded
		exhausted     *serviceerror.ResourceExhausted
		notReady      *serviceerror.WorkflowNotReady
	)
	return errors.As(err, &updateTimeout) || errors.As(err, &deadline) || errors.As(err, &exhausted) ||
		errors.As(err, &notReady) || errors.Is(err, context.DeadlineExceeded)
}

// Pay applies a payment through the workflow's pay update and returns what became of it.
func Pay(ctx context.Context, c client.Client, orderID string, p workflows.PaymentSignal) (ordersaga.PaymentResult, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.OrderWorkflowID(orderID), UpdateName: workflows.UpdatePay,
		Args: []any{p}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return "", fmt.Errorf("pay order %s: %w", orderID, err)
	}
	var res ordersaga.PaymentResult
	if err := h.Get(ctx, &res); err != nil {
		return "", fmt.Errorf("pay order %s: %w", orderID, err)
	}
	return res, nil
}

// Cancel cancels an order and returns it once final and compensated.
func Cancel(ctx context.Context, c client.Client, orderID, reason string) (ordersaga.Order, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.OrderWorkflowID(orderID), UpdateName: workflows.UpdateCancel,
		Args: []any{reason}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return ordersaga.Order{}, fmt.Errorf("cancel order %s: %w", orderID, err)
	}
	var o ordersaga.Order
	if err := h.Get(ctx, &o); err != nil {
		return ordersaga.Order{}, fmt.Errorf("cancel order %s: %w", orderID, err)
	}
	return o, nil
}

// Status queries a running order's workflow.
func Status(ctx context.Context, c client.Client, orderID string) (ordersaga.Order, error) {
	v, err := c.QueryWorkflow(ctx, workflows.OrderWorkflowID(orderID), "", workflows.QueryStatus)
	if err != nil {
		return ordersaga.Order{}, fmt.Errorf("order %s status: %w", orderID, err)
	}
	var o ordersaga.Order
	if err := v.Get(&o); err != nil {
		return ordersaga.Order{}, fmt.Errorf("order %s status: %w", orderID, err)
	}
	return o, nil
}
