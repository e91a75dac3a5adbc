package platform

import (
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
	if interval < time.Second {
		return fmt.Errorf("reconcile schedule: interval %s is shorter than 1s", interval)
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	action := &client.ScheduleWorkflowAction{
		ID:        workflows.ReconcileScheduleID,
		Workflow:  workflows.ReconcileWorkflow,
		Args:      []any{in},
		TaskQueue: workflows.TaskQueue,
		// A run never takes longer than a few intervals; a stuck one is cut off and the next starts.
		WorkflowExecutionTimeout: max(10*interval, 10*time.Minute),
	}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      workflows.ReconcileScheduleID,
		Spec:    spec,
		Action:  action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Memo:    map[string]any{"purpose": "ordersaga reconciliation: repairs Redis to the database's truth"},
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create reconcile schedule: %w", err)
	}
	h := c.ScheduleClient().GetHandle(ctx, workflows.ReconcileScheduleID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := u.Description.Schedule
			s.Spec = &spec
			s.Action = action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update reconcile schedule: %w", err)
	}
	return nil
}
