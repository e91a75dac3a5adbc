package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/activities"
)

// refundActs is only used to name the sender's activity methods; the refund worker registers the real one.
var refundActs *activities.RefundSender

// RefundSendWorkflow is one run of the refund sender: page after page of the refund outbox (oldest first),
// it sends each refund to the provider as an activity, Parallel at once (a window: as one ends the next
// starts), each retried with backoff for up to its patience (RefundSendPatience). A refund is marked sent
// only with the provider's reference, or its permanent refusal recorded; the event ID is the provider's
// idempotency key, so a send repeated after a crash or a lost answer is answered with the first refund. When
// a send still fails after its patience (the provider is down), the run lets the page's other sends finish
// and stops: the rest waits in the outbox for the next run. A Temporal Schedule (RefundSendScheduleID,
// overlap SKIP) starts it every REFUND_SEND_INTERVAL.
func RefundSendWorkflow(ctx workflow.Context, in RefundSendInput) (RefundSendResult, error) {
	var res RefundSendResult
	if in.ProviderTimeout <= 0 {
		err := fmt.Errorf("refund send input: provider timeout %s must be positive (REFUND_PROVIDER_TIMEOUT)", in.ProviderTimeout)
		return res, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeBadInput, err)
	}
	pageSize, parallel := orDefault(in.PageSize, DefaultRefundPage), orDefault(in.Parallel, DefaultRefundParallel)
	readCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
		},
	})
	sendCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// An attempt may take the provider's bound, then the mark; it heartbeats meanwhile, so a worker
		// killed in the middle is found out within the heartbeat timeout and the send retried on another.
		StartToCloseTimeout:    RefundSendAttempt(in.ProviderTimeout),
		HeartbeatTimeout:       5 * activities.RefundHeartbeatEvery,
		ScheduleToCloseTimeout: orDefault(in.Patience, RefundSendPatience(in.ProviderTimeout)),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 15 * time.Second,
		},
	})
	var afterID int64
	for range RefundMaxPages {
		var page []activities.RefundToSend
		err := workflow.ExecuteActivity(readCtx, refundActs.PendingRefunds, activities.RefundPageInput{
			AfterID: afterID, Limit: pageSize,
		}).Get(ctx, &page)
		if err != nil {
			return res, fmt.Errorf("read the refund outbox: %w", err)
		}
		// A window of Parallel sends: as one ends the next starts, so a slow or retried send holds up one
		// place, not the page. A send that failed past its patience stops the run once the window drains.
		sel := workflow.NewSelector(ctx)
		inFlight, next := 0, 0
		for next < len(page) || inFlight > 0 {
			for inFlight < parallel && next < len(page) && res.Deferred == 0 {
				p := page[next]
				next++
				inFlight++
				sel.AddFuture(workflow.ExecuteActivity(sendCtx, refundActs.SendRefund, p), func(f workflow.Future) {
					inFlight--
					var out activities.RefundOutcome
					if err := f.Get(ctx, &out); err != nil {
						res.Deferred++
						res.LastError = err.Error()
						workflow.GetLogger(ctx).Warn("refund deferred to the next run", "event_id", p.EventID, "error", err)
						return
					}
					if out.Refused {
						res.Refused++
						return
					}
					res.Sent++
					if out.Replayed {
						res.Replayed++
					}
				})
			}
			if inFlight == 0 {
				break
			}
			sel.Select(ctx)
		}
		if res.Deferred > 0 {
			return res, nil
		}
		if len(page) < pageSize {
			break
		}
		afterID = page[len(page)-1].ID
	}
	return res, nil
}
