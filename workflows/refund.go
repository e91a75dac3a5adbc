package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
)

// RefundWorkflowID is the workflow ID of the refund of one payment event: one event, one refund, however
// often the provider delivers it.
func RefundWorkflowID(eventID string) string { return "refund-" + eventID }

// RefundWorkflow records a payment whose order cannot take it — the order's workflow is closed or unknown to
// Temporal — as refunded, once per event (the payments table's UNIQUE event_id keeps the first record). The
// provider call itself is out of scope: RecordPayment records and logs it, a step that must succeed
// (must_succeed.go). It returns the payment as stored.
func RefundWorkflow(ctx workflow.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
	p.Result = ordersaga.PaymentRefunded
	if p.Detail == "" {
		p.Detail = "payment for an order that is closed or unknown"
	}
	steps := newMustSucceed(workflow.GetLogger(ctx), 0)
	var rec ordersaga.PaymentRecord
	if err := steps.run(ctx, &rec, acts.RecordPayment, p); err != nil {
		return ordersaga.PaymentRecord{}, err
	}
	return rec, nil
}
