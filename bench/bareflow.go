package main

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/workflows"
)

// bareInput shapes the bare workflow: the order workflow's skeleton with nothing inside the steps.
type bareInput struct {
	OrderID        string
	PaymentTimeout time.Duration
	// Local runs the two steps as local activities (as OrderWorkflow does), else as activities.
	Local bool
	// Upserts is how many search-attribute upserts the workflow makes: 2 as OrderWorkflow (OrderStatus and
	// OrderSKUs at start, OrderStatus and PaymentDeadline on AWAITING_PAYMENT), 1 when the starter passes the
	// first set with the start options (the candidate), 0 none.
	Upserts int
}

// BareOrderWorkflow is the limit of layer 3: Update-with-Start answers from an update that waits for two
// no-op steps (reserve, deduct); then the workflow waits for a payment signal or its deadline.
func BareOrderWorkflow(ctx workflow.Context, in bareInput) (string, error) {
	status := "RESERVING"
	if err := workflow.SetUpdateHandler(ctx, workflows.UpdateReservation, func(ctx workflow.Context) (string, error) {
		err := workflow.Await(ctx, func() bool { return status != "RESERVING" })
		return status, err
	}); err != nil {
		return "", err
	}
	if in.Upserts == 2 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SAOrderStatus.ValueSet(status),
			workflows.SAOrderSKUs.ValueSet([]string{hotSKU})); err != nil {
			return "", err
		}
	}
	for _, step := range []string{"reserve", "deduct"} {
		var err error
		if in.Local {
			lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 5 * time.Second})
			err = workflow.ExecuteLocalActivity(lctx, NoopStep, in.OrderID, step).Get(ctx, nil)
		} else {
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
				RetryPolicy: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond}})
			err = workflow.ExecuteActivity(actx, NoopStep, in.OrderID, step).Get(ctx, nil)
		}
		if err != nil {
			return "", err
		}
	}
	status = "AWAITING_PAYMENT"
	if in.Upserts > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SAOrderStatus.ValueSet(status),
			workflows.SAPaymentDeadline.ValueSet(workflow.Now(ctx).Add(in.PaymentTimeout))); err != nil {
			return "", err
		}
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalPayment), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		status = "PAID"
	})
	sel.AddFuture(workflow.NewTimer(ctx, in.PaymentTimeout), func(workflow.Future) { status = "EXPIRED" })
	sel.Select(ctx)
	return status, nil
}

// NoopStep is the bare workflow's step: nothing.
func NoopStep(context.Context, string, string) error { return nil }
