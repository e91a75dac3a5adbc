package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ordersaga/ordersaga/internal/refundsend"
)

// RefundSender are the refund sender's activities (workflows.RefundSendWorkflow). They run on the refund task
// queue, polled only by workers that have a provider (REFUND_PROVIDER_URL): register a *RefundSender with that
// worker; workflows refer to the methods through a nil *RefundSender.
type RefundSender struct {
	Sender *refundsend.Sender
}

// RefundToSend is one refund of the outbox with its row's ID; RefundOutcome what became of its send.
type (
	RefundToSend  = refundsend.Pending
	RefundOutcome = refundsend.Outcome
)

// RefundHeartbeatEvery is how often SendRefund heartbeats while it waits for the provider; the workflow's
// heartbeat timeout for the send is a few of these.
const RefundHeartbeatEvery = time.Second

// RefundPageInput asks for a page of the refund outbox: up to Limit refunds after the row AfterID.
type RefundPageInput struct {
	AfterID int64
	Limit   int
}

// PendingRefunds returns a page of the refund outbox, oldest first.
func (a *RefundSender) PendingRefunds(ctx context.Context, in RefundPageInput) ([]refundsend.Pending, error) {
	if a == nil || a.Sender == nil {
		return nil, errNoSender
	}
	return a.Sender.Page(ctx, in.AfterID, in.Limit)
}

// SendRefund hands one refund to the provider and records its answer (refundsend.Sender.Send). A retryable
// failure is the activity's error, retried by its policy with the same idempotency key; a permanent refusal
// is an outcome (Refused), recorded on the row.
func (a *RefundSender) SendRefund(ctx context.Context, p refundsend.Pending) (refundsend.Outcome, error) {
	if a == nil || a.Sender == nil {
		return refundsend.Outcome{}, errNoSender
	}
	// Heartbeats while the provider is asked, so that a worker that dies mid-send is found out within the
	// heartbeat timeout rather than the send's whole bound.
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(RefundHeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	out, err := a.Sender.Send(ctx, p)
	if err != nil {
		activity.GetLogger(ctx).Warn("refund not sent yet", "event_id", p.EventID, "order_id", p.OrderID,
			"attempt", activity.GetInfo(ctx).Attempt, "error", err)
		return out, err
	}
	if out.Refused {
		activity.GetLogger(ctx).Error("the provider refused a refund for good: recorded, for a person to decide",
			"event_id", p.EventID, "order_id", p.OrderID, "amount_cents", p.AmountCents, "currency", p.Currency,
			"code", out.Code, "reason", out.Reason)
	}
	return out, nil
}

// errNoSender: a worker registered the refund activities without a provider (a wiring error, retried so that
// a worker that has one takes the task).
var errNoSender = errors.New("this worker has no refund provider (REFUND_PROVIDER_URL)")
