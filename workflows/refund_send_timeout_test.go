package workflows

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/refunds"
)

// TestRefundSend_ALongProviderTimeoutLeavesRoomForARetry: with REFUND_PROVIDER_TIMEOUT at 100 s, the first
// attempt of a send waits out the provider's timeout and fails; the second, as slow, is answered, and the
// refund is sent in this run instead of deferred to the next. The server ends a send at its schedule-to-close
// timeout (the run's patience for it) whatever the attempt; the SDK's test environment does not, so the
// mock loses an answer that comes after it.
func TestRefundSend_ALongProviderTimeoutLeavesRoomForARetry(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Second
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	RegisterRefundSender(env, &activities.RefundSender{})
	refund := activities.RefundToSend{ID: 1, Refund: refunds.Refund{EventID: "evt-slow", OrderID: "o-slow", AmountCents: 100, Currency: "EUR"}}
	env.OnActivity(refundActs.PendingRefunds, mock.Anything, mock.Anything).Return([]activities.RefundToSend{refund}, nil).Once()
	start := env.Now()
	var attempts, answered atomic.Int32
	env.OnActivity(refundActs.SendRefund, mock.Anything, mock.Anything).After(timeout).Return(
		func(ctx context.Context, p activities.RefundToSend) (activities.RefundOutcome, error) {
			info := activity.GetInfo(ctx)
			attempts.Store(info.Attempt)
			if env.Now().Sub(start) > info.ScheduleToCloseTimeout {
				return activities.RefundOutcome{}, errors.New("the send's schedule-to-close timeout passed: the server ended it")
			}
			if info.Attempt == 1 {
				return activities.RefundOutcome{}, errors.New("send refund evt-slow: no answer in time (timeout 1m40s)")
			}
			answered.Store(info.Attempt)
			return activities.RefundOutcome{EventID: p.EventID, Ref: "re_slow"}, nil
		})
	env.ExecuteWorkflow(RefundSendWorkflow, RefundSendInput{ProviderTimeout: timeout})
	var res RefundSendResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Sent != 1 || res.Deferred != 0 || answered.Load() != 2 {
		t.Errorf("result %+v after %d attempts (answered at attempt %d); want the refund sent by its second attempt",
			res, attempts.Load(), answered.Load())
	}
}

// TestRefundSend_NoProviderTimeoutIsABadInput: the workers always give the run REFUND_PROVIDER_TIMEOUT (the
// workflows have no default of their own); a run without it fails at once as a bad input and sends nothing.
func TestRefundSend_NoProviderTimeoutIsABadInput(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	RegisterRefundSender(env, &activities.RefundSender{})
	env.ExecuteWorkflow(RefundSendWorkflow, RefundSendInput{})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeBadInput || !appErr.NonRetryable() {
		t.Fatalf("run without a provider timeout: %v; want a non-retryable %s error", err, activities.ErrTypeBadInput)
	}
}
