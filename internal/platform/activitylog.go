package platform

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// LocalActivityFailures logs every failed attempt of a local activity with its whole error, at Warn (Debug
// for a decided outcome: a non-retryable application error, such as sold out, that the workflow acts on and
// logs itself). The SDK logs each failed attempt of a regular activity ("Activity error.") but not of a
// local one, and the workflow hears only the last attempt's error: when a step's schedule-to-close bound cuts
// that attempt short, its error is the deadline's, and what failed the attempts before it (a Redis or
// database error) would be in no log at all. StartWorker puts it on every order worker.
type LocalActivityFailures struct {
	interceptor.WorkerInterceptorBase
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (*LocalActivityFailures) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &localActivityFailureLog{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type localActivityFailureLog struct {
	interceptor.ActivityInboundInterceptorBase
}

// LocalActivityFailed is the message of the line logged for a failed attempt of a local activity.
const LocalActivityFailed = "Local activity attempt failed."

func (i *localActivityFailureLog) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	out, err := i.Next.ExecuteActivity(ctx, in)
	if err != nil && activity.GetInfo(ctx).IsLocalActivity {
		// The activity's logger carries the activity's type, its attempt and its workflow's ID.
		logger := activity.GetLogger(ctx)
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.NonRetryable() {
			logger.Debug(LocalActivityFailed, "error", err)
		} else {
			logger.Warn(LocalActivityFailed, "error", err)
		}
	}
	return out, err
}
