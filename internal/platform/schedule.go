package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersaga/ordersaga/workflows"
)

// EnsureSchedule creates the reconciliation Schedule (workflows.ReconcileScheduleID) that starts
// ReconcileWorkflow every interval with overlap policy SKIP, or, when it exists (a second starter, a restart),
// updates its interval, action and policy in place: there is only ever one.
func EnsureSchedule(ctx context.Context, c client.Client, interval time.Duration) error {
	return EnsureScheduleWith(ctx, c, interval, workflows.ReconcileInput{})
}

// EnsureScheduleWith is EnsureSchedule with the runs' input (batch size, grace period).
func EnsureScheduleWith(ctx context.Context, c client.Client, interval time.Duration, in workflows.ReconcileInput) error {
	return ensureSchedule(ctx, c, scheduleOf{
		id: workflows.ReconcileScheduleID, what: "reconcile", workflow: workflows.ReconcileWorkflow, input: in,
		memo: "ordersaga reconciliation: repairs Redis to the database's truth",
	}, interval)
}

// EnsureCleanupSchedule creates or updates, like EnsureSchedule, the Schedule of the idempotency records'
// cleanup (workflows.IdempotencyCleanupScheduleID): IdempotencyCleanupWorkflow every interval, overlap SKIP.
func EnsureCleanupSchedule(ctx context.Context, c client.Client, interval time.Duration, in workflows.IdempotencyCleanupInput) error {
	return ensureSchedule(ctx, c, scheduleOf{
		id: workflows.IdempotencyCleanupScheduleID, what: "idempotency cleanup", workflow: workflows.IdempotencyCleanupWorkflow,
		input: in, memo: "ordersaga idempotency cleanup: deletes the Idempotency-Key records older than IDEMPOTENCY_RETENTION",
	}, interval)
}

// EnsureRefundSchedule creates or updates, like EnsureSchedule, the refund sender's Schedule
// (workflows.RefundSendScheduleID): RefundSendWorkflow every interval on workflows.RefundTaskQueue, overlap
// SKIP. The worker that has a refund provider ensures it at start.
func EnsureRefundSchedule(ctx context.Context, c client.Client, interval time.Duration, in workflows.RefundSendInput) error {
	return ensureSchedule(ctx, c, scheduleOf{
		id: workflows.RefundSendScheduleID, what: "refund sender", workflow: workflows.RefundSendWorkflow,
		input: in, taskQueue: workflows.RefundTaskQueue,
		memo: "ordersaga refund sender: sends the recorded refunds to the payment provider (REFUND_PROVIDER_URL)",
	}, interval)
}

// scheduleOf is one of the process's Schedules: its ID, the workflow it starts and that workflow's input, on
// taskQueue (empty: workflows.TaskQueue).
type scheduleOf struct {
	id, what, memo string
	workflow       any
	input          any
	taskQueue      string
}

func ensureSchedule(ctx context.Context, c client.Client, s scheduleOf, interval time.Duration) error {
	if interval < time.Second {
		return fmt.Errorf("%s schedule: interval %s is shorter than 1s", s.what, interval)
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	action := &client.ScheduleWorkflowAction{
		ID:        s.id,
		Workflow:  s.workflow,
		Args:      []any{s.input},
		TaskQueue: cmp.Or(s.taskQueue, workflows.TaskQueue),
		// A run never takes longer than a few intervals; a stuck one is cut off and the next starts.
		WorkflowExecutionTimeout: max(10*interval, 10*time.Minute),
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      s.id,
		Spec:    spec,
		Action:  action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Memo:    map[string]any{"purpose": s.memo},
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create %s schedule: %w", s.what, err)
	}
	h := c.ScheduleClient().GetHandle(ctx, s.id)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sc := u.Description.Schedule
			sc.Spec = &spec
			sc.Action = action
			if sc.Policy == nil {
				sc.Policy = &client.SchedulePolicies{}
			}
			sc.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &sc}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update %s schedule: %w", s.what, err)
	}
	return nil
}
