package workflows

import (
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A step that must succeed — a compensation (RestoreOrder, ReleaseLine), a record (CloseOrder, RecordPayment)
// or the application of a payment (MarkPaid) — is never given up: the stock or the money depends on its outcome,
// and an attempt may have landed. It runs in windows of StuckAfter (the activity's schedule-to-close): a window
// that ends without success counts MetricStepStuck, logs the step's last error, sets SAStuckStep on the
// workflow (once) and runs the step again, as a new activity, until it succeeds or fails for good (a
// non-retryable error: the store decided). Its success unsets SAStuckStep. docs/design.md says why the
// deadline, the cancels and other payments wait meanwhile.
//
// Replay: a history recorded before the windows has no schedule-to-close on these activities, so none of its
// activities ended without success or a decision; the commands of the stuck path (the upserts, the activity
// run again) only follow such an end and need no version.

// mustSucceed runs the steps that must succeed of one workflow and keeps its SAStuckStep.
type mustSucceed struct {
	logger log.Logger
	window time.Duration // each window of a step
	stuck  int           // steps past their first window, not yet ended
}

// newMustSucceed keeps the steps of one workflow, in windows of window (0 = StuckAfter).
func newMustSucceed(logger log.Logger, window time.Duration) *mustSucceed {
	return &mustSucceed{logger: logger, window: orDefault(window, StuckAfter)}
}

// step is one step that must succeed, started.
type step struct {
	m        *mustSucceed
	ctx      workflow.Context
	activity any
	args     []any
	f        workflow.Future
	stuck    bool
}

// start starts the activity on a context of ctx's that no cancel request ends (a cancelled workflow still
// compensates and records). Wait for it with get, in the coroutine of ctx.
func (m *mustSucceed) start(ctx workflow.Context, activity any, args ...any) *step {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	s := &step{m: m, ctx: dctx, activity: activity, args: args}
	s.f = workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, mustSucceedOptions(m.window)), activity, args...)
	return s
}

// run starts the activity and waits for it.
func (m *mustSucceed) run(ctx workflow.Context, out any, activity any, args ...any) error {
	return m.start(ctx, activity, args...).get(out)
}

// get waits until the step succeeds (nil, the result in out) or fails for good, running it again after each
// window that ends without either.
func (s *step) get(out any) error {
	for {
		err := s.f.Get(s.ctx, out)
		name, undecided := windowEnded(err)
		if !undecided {
			if s.stuck {
				s.m.unstuck(s.ctx)
			}
			return err
		}
		workflow.GetMetricsHandler(s.ctx).WithTags(map[string]string{"step": name}).Counter(MetricStepStuck).Inc(1)
		s.m.logger.Error("a step that must succeed is stuck; running it again", "step", name,
			"stuck_after", s.m.window, "error", err)
		if !s.stuck {
			s.stuck = true
			s.m.markStuck(s.ctx, name)
		}
		s.f = workflow.ExecuteActivity(workflow.WithActivityOptions(s.ctx, stuckOptions(s.m.window)), s.activity, s.args...)
	}
}

// windowEnded reports whether err ends a window without an outcome, and names the activity: the window's time
// ran out (retry state TIMEOUT), or its attempts did while each failed retryably (the test environment gives
// an activity at most 10). A success, a non-retryable failure or a cancel is an outcome.
func windowEnded(err error) (activity string, ended bool) {
	var actErr *temporal.ActivityError
	if !errors.As(err, &actErr) {
		return "", false
	}
	var appErr *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &canceled):
		return "", false
	case actErr.RetryState() == enumspb.RETRY_STATE_TIMEOUT:
	case errors.As(err, &appErr) && !appErr.NonRetryable():
	default:
		return "", false
	}
	return actErr.ActivityType().GetName(), true
}

func (m *mustSucceed) markStuck(ctx workflow.Context, name string) {
	m.stuck++
	if m.stuck > 1 {
		return // marked by a step before it (the releases run in parallel)
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SAStuckStep.ValueSet(name)); err != nil {
		m.logger.Error("upsert search attributes", "error", err)
	}
}

func (m *mustSucceed) unstuck(ctx workflow.Context) {
	m.stuck--
	if m.stuck > 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SAStuckStep.ValueUnset()); err != nil {
		m.logger.Error("upsert search attributes", "error", err)
	}
}
