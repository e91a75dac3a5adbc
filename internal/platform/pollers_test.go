package platform_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/workflows"
)

// busyWorkflow stays in the worker's cache and costs a few milliseconds of work per workflow task: each batch
// of "tick" signals is a task on the worker's sticky queue, as each expiring order's timer is.
func busyWorkflow(ctx workflow.Context) error {
	ticks := workflow.GetSignalChannel(ctx, "tick")
	for {
		ticks.Receive(ctx, nil)
		for ticks.ReceiveAsync(nil) {
		}
		for end := time.Now().Add(5 * time.Millisecond); time.Now().Before(end); {
		}
	}
}

// newcomer is a new workflow: its first task waits on the task queue's normal queue, as a new order's does.
func newcomer(workflow.Context) error { return nil }

// TestOrderWorkerPollsNewWorkflowsWhileItsStickyQueueHasABacklog: while the worker's sticky queue has a
// backlog (workflows in its cache get tasks faster than it completes them, as in a wave of payment
// deadlines), a new workflow on the task queue must still be picked up: the order worker keeps a poll open on
// the normal queue. With the SDK's default pollers every poll went to the sticky queue while it had a
// backlog, and a new order waited until nothing fed it any more.
func TestOrderWorkerPollsNewWorkflowsWhileItsStickyQueueHasABacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("keeps a worker busy for seconds")
	}
	srv := sagatest.NewServer(t)
	c := srv.GetDefaultClient()
	// Two workflow tasks at a time and twenty busy workflows signalled without a pause: each has a task
	// waiting on the sticky queue nearly all the time.
	w := platform.NewWorker(c, &activities.Activities{}, worker.Options{MaxConcurrentWorkflowTaskExecutionSize: 2})
	w.RegisterWorkflowWithOptions(busyWorkflow, workflow.RegisterOptions{Name: "test-busy"})
	w.RegisterWorkflowWithOptions(newcomer, workflow.RegisterOptions{Name: "test-newcomer"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const busy = 20
	ids := make([]string, busy)
	for i := range ids {
		ids[i] = fmt.Sprintf("busy-%d", i)
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids[i], TaskQueue: workflows.TaskQueue}, "test-busy"); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, id := range ids {
			_ = c.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	}()
	// The signaller feeds the sticky queue for at most feedFor, or until the new workflow is done.
	const feedFor = 15 * time.Second
	var newcomerDone, fedToTheEnd atomic.Bool
	signalled := make(chan struct{})
	go func() {
		defer close(signalled)
		for i, end := 0, time.Now().Add(feedFor); !newcomerDone.Load(); i++ {
			if time.Now().After(end) {
				fedToTheEnd.Store(true)
				return
			}
			_ = c.SignalWorkflow(ctx, ids[i%busy], "", "tick", nil)
		}
	}()
	time.Sleep(2 * time.Second) // the busy workflows are in the worker's cache and their tasks queue up

	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "newcomer", TaskQueue: workflows.TaskQueue}, "test-newcomer")
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	newcomerDone.Store(true)
	<-signalled
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the new workflow completed in %s", time.Since(start))
	if fedToTheEnd.Load() {
		t.Errorf("the new workflow completed only after the sticky queue stopped being fed (%s): it waited for the backlog", time.Since(start))
	}
}
