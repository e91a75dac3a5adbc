package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// stuckMark is one upsert of SAStuckStep: the step set (or "" when unset) and when.
type stuckMark struct {
	step string
	at   time.Time
}

// recordStuckMarks records the workflow's upserts of SAStuckStep; the returned func gives them once it ran.
// The SDK hides an unset attribute from SearchAttributes' readers: an upsert that shows none is taken for the
// unset of SAStuckStep, the only attribute the workflows unset.
func (h *harness) recordStuckMarks() func() []stuckMark {
	var (
		mu    sync.Mutex
		marks []stuckMark
	)
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if !sa.ContainsKey(SAStuckStep) && sa.Size() > 0 {
			return
		}
		step, _ := sa.GetKeyword(SAStuckStep) // unset: ""
		mu.Lock()
		defer mu.Unlock()
		marks = append(marks, stuckMark{step, h.env.Now().UTC()})
	}).Return(nil)
	return func() []stuckMark {
		mu.Lock()
		defer mu.Unlock()
		return append([]stuckMark(nil), marks...)
	}
}

// TestOrderWorkflowStuckStep: a step that must succeed and keeps failing with a retryable error is never
// given up (the money or the stock depends on it), but after StuckAfter the order says so: SAStuckStep names
// the step, MetricStepStuck counts each StuckAfter without success, and both go on until the step succeeds,
// when the attribute is unset.
func TestOrderWorkflowStuckStep(t *testing.T) {
	t.Parallel()
	const failFor = 5 * time.Minute // the step's dependency is down this long after its first attempt
	down := errors.New("mysql: server has gone away")
	tests := []struct {
		name string
		step string
		// act makes the step fail (failing) and starts it at a minute.
		act        func(h *harness, failing func(ctx context.Context) error)
		wantStatus ordersaga.Status
	}{
		{
			name: "mark_paid_marked_stuck_then_applied",
			step: actMarkPaid,
			act: func(h *harness, failing func(ctx context.Context) error) {
				h.markPaid = func(ctx context.Context, _ activities.MarkPaidInput) error { return failing(ctx) }
				h.signalPayment(time.Minute, h.payment("evt-stuck"))
			},
			wantStatus: ordersaga.StatusPaid,
		},
		{
			name: "restore_order_marked_stuck_then_restored",
			step: actRestore,
			act: func(h *harness, failing func(ctx context.Context) error) {
				h.restore = func(ctx context.Context, _ activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
					return nil, failing(ctx)
				}
				h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{}) })
			},
			wantStatus: ordersaga.StatusCancelled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.in.PaymentTimeout = time.Hour
			marks := h.recordStuckMarks()
			until := testStart.Add(time.Minute + failFor)
			var (
				mu     sync.Mutex
				starts []time.Time // the first attempt of each activity the step ran as
			)
			tt.act(h, func(ctx context.Context) error {
				if activity.GetInfo(ctx).Attempt == 1 {
					mu.Lock()
					starts = append(starts, h.env.Now().UTC())
					mu.Unlock()
				}
				if h.env.Now().Before(until) {
					return down
				}
				return nil
			})

			got := h.run()

			assert.Equal(t, tt.wantStatus, got.Status)
			attempts := h.callTimes(tt.step)
			require.NotEmpty(t, attempts)
			succeeded := attempts[len(attempts)-1]
			require.False(t, succeeded.Before(until), "the step succeeded at %s, while failing", succeeded)
			// Each activity but the last ended without success: its StuckAfter ran out (or, in the test
			// environment, which gives an activity at most 10 attempts, its attempts), and the step started again.
			require.GreaterOrEqual(t, len(starts), 3, "the step ran as %d activities in %s of failures", len(starts), failFor)
			assert.LessOrEqual(t, starts[1].Sub(starts[0]), StuckAfter, "the first window lasted longer than StuckAfter")
			assert.Equal(t, []stuckMark{{tt.step, starts[1]}, {"", succeeded}}, marks(),
				"StuckStep set when the first window ended, unset when the step succeeded")
			assert.Equal(t, int64(len(starts)-1), h.metrics.count(MetricStepStuck, map[string]string{"step": tt.step}),
				"%s counted once per window without success", MetricStepStuck)
		})
	}
}
