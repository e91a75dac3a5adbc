package platform_test

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/workflows"
)

// Two starter boots: the schedule is created once, the second call updates it, and overlapping runs are skipped.
func TestEnsureSchedule_CreatesOnceAndUpdates(t *testing.T) {
	t.Parallel()
	srv := sagatest.NewServer(t)
	c := srv.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := platform.EnsureSchedule(ctx, c, time.Hour); err != nil {
		t.Fatalf("first boot: %v", err)
	}
	if err := platform.EnsureSchedule(ctx, c, 2*time.Hour); err != nil {
		t.Fatalf("second boot: %v", err)
	}
	// Listing goes through visibility, which trails the writes: wait until it shows the schedule.
	var ids []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		iter, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for iter.HasNext() {
			s, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, s.ID)
		}
		if len(ids) > 0 {
			break
		}
	}
	if len(ids) != 1 || ids[0] != workflows.ReconcileScheduleID {
		t.Errorf("schedules = %v, want exactly [%s]", ids, workflows.ReconcileScheduleID)
	}
	desc, err := c.ScheduleClient().GetHandle(ctx, workflows.ReconcileScheduleID).Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.Schedule.Policy.Overlap; got != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP {
		t.Errorf("overlap policy = %v, want SKIP", got)
	}
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != 2*time.Hour {
		t.Errorf("intervals = %+v, want one of 2h (the second boot's)", iv)
	}
	t.Logf("schedule %s: %d schedule(s) after two boots, overlap %v, every %v", workflows.ReconcileScheduleID,
		len(ids), desc.Schedule.Policy.Overlap, desc.Schedule.Spec.Intervals[0].Every)
}
