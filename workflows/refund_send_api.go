package workflows

import (
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
)

// RefundTaskQueue is where RefundSendWorkflow and its activities run: only workers that have a refund
// provider (REFUND_PROVIDER_URL) poll it, so no other worker ever takes a send.
const RefundTaskQueue = "ordersaga-refunds"

// RefundSendScheduleID is the Temporal Schedule that starts RefundSendWorkflow (overlap SKIP: one sender at
// a time); its runs get workflow IDs RefundSendScheduleID + "-" + the scheduled time.
const RefundSendScheduleID = "ordersaga-refund-sender"

// Bounds of a refund send run.
const (
	// DefaultRefundPage is the refunds one activity reads from the outbox.
	DefaultRefundPage = 100
	// RefundMaxPages bounds one run (its history: about three events per refund); what is left waits for the
	// next run.
	RefundMaxPages = 20
	// DefaultRefundParallel is the refunds of a page sent at once.
	DefaultRefundParallel = 8
	// MinRefundSendPatience is the least time one refund's send is retried within a run (RefundSendPatience).
	MinRefundSendPatience = 2 * time.Minute
	// refundMarkTime is what an attempt of a send allows, beyond the provider's timeout, to mark the answer.
	refundMarkTime = 10 * time.Second
)

// RefundSendAttempt bounds one attempt of a send (its start-to-close timeout): the provider's timeout, then
// the mark.
func RefundSendAttempt(providerTimeout time.Duration) time.Duration {
	return providerTimeout + refundMarkTime
}

// RefundSendPatience is how long one refund's send is retried within a run (its schedule-to-close timeout)
// before the run stops and leaves it, and the rest of the outbox, to the next run: MinRefundSendPatience, or
// three attempts that each take their whole bound when that is longer, so a provider's long timeout still
// leaves room for a retry.
func RefundSendPatience(providerTimeout time.Duration) time.Duration {
	return max(MinRefundSendPatience, 3*RefundSendAttempt(providerTimeout))
}

// RefundSendInput configures one run of the refund sender. ProviderTimeout is required; the other zero
// values mean the defaults.
type RefundSendInput struct {
	PageSize int // refunds per page (0 = DefaultRefundPage)
	Parallel int // sends of a page at once (0 = DefaultRefundParallel)
	// ProviderTimeout is the workers' REFUND_PROVIDER_TIMEOUT: one attempt of a send may take that long
	// (the worker that ensures the Schedule gives it; 0 is a bad input).
	ProviderTimeout time.Duration
	// Patience bounds one refund's retries within a run (0 = RefundSendPatience(ProviderTimeout)).
	Patience time.Duration
}

// RefundSendResult is what one run did.
type RefundSendResult struct {
	// Sent counts refunds marked sent, Replayed those of them the provider had executed already (a repeated
	// send), Refused those the provider refused for good (recorded on the row).
	Sent, Replayed, Refused int
	// Deferred counts refunds whose send kept failing for the run's patience; the run stopped there and the
	// next run sends them.
	Deferred int
	// LastError is the last deferred send's error ("" when none).
	LastError string
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// RegisterRefundSender puts RefundSendWorkflow and the sender's activities on a worker of RefundTaskQueue.
func RegisterRefundSender(r worker.Registry, a *activities.RefundSender) {
	r.RegisterWorkflow(RefundSendWorkflow)
	r.RegisterActivity(a)
}
