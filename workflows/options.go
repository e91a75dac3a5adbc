package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/activities"
)

// Business outcomes never retry; everything else does.
var nonRetryableTypes = []string{
	activities.ErrTypeSoldOut, activities.ErrTypeCompensated, activities.ErrTypeUnknownSKU, activities.ErrTypeBadInput,
	activities.ErrTypeLimitExceeded,
}

// Timeouts are short so that a step on a dead worker is retried on another within seconds; the
// schedule-to-close bound on the forward steps makes an order decide (and compensate) instead of hanging.
var (
	// The forward steps are local activities: short, idempotent and on the reservation path, they run in the
	// worker that runs the workflow task, without a round trip through the server per step. If that worker
	// dies, the task times out and another worker replays the workflow and runs the step again — which the
	// markers and the ledger make safe.
	reserveOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Second,
		ScheduleToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second,
			NonRetryableErrorTypes: nonRetryableTypes,
		},
	}
	deductOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 60 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second,
			NonRetryableErrorTypes: nonRetryableTypes,
		},
	}
	confirmOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout:    5 * time.Second,
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 100 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 5 * time.Second,
		},
	}
)

// mustSucceedOptions is for compensation, record keeping and the application of a payment: retry until it
// works, however long, in windows (must_succeed.go): each window without success says so.
func mustSucceedOptions(window time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: window,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: 0,
		},
	}
}

// stuckOptions run a step again once a window of it ended without success: at once, then every 30 s (the
// interval its retries had reached; a quarter of a window shorter than two minutes), for another window.
func stuckOptions(window time.Duration) workflow.ActivityOptions {
	every := min(30*time.Second, window/4)
	return workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: window,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: every, BackoffCoefficient: 1, MaximumInterval: every,
			MaximumAttempts: 0,
		},
	}
}
