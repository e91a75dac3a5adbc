package platform_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
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
			if err := c.TerminateWorkflow(context.Background(), id, "", "test over"); err != nil {
				t.Errorf("terminate %s: %v", id, err)
			}
		}
	}()
	// The signallers feed the sticky queue for at most feedFor, or until the new workflow is done; a signal
	// that fails stops its signaller (a signal lost is a task the backlog lacks) and fails the test. Several
	// at once, so that the workflows get tasks faster than the worker's two slots complete them also when
	// everything runs slower (the race detector).
	const feedFor, signallers = 15 * time.Second, 4
	var newcomerDone, fedToTheEnd atomic.Bool
	signalErrs := make(chan error, signallers)
	signalled := make(chan struct{})
	var feeding sync.WaitGroup
	for g := range signallers {
		feeding.Go(func() {
			for i, end := g, time.Now().Add(feedFor); !newcomerDone.Load(); i += signallers {
				if time.Now().After(end) {
					fedToTheEnd.Store(true)
					return
				}
				if err := c.SignalWorkflow(ctx, ids[i%busy], "", "tick", nil); err != nil {
					signalErrs <- fmt.Errorf("signal %d to %s: %w", i, ids[i%busy], err)
					return
				}
			}
		})
	}
	go func() { feeding.Wait(); close(signalled) }()
	time.Sleep(2 * time.Second) // the busy workflows are in the worker's cache and their tasks queue up

	// The backlog the test is about: at least a quarter of the busy workflows have a task waiting for a poll,
	// more than twice what the worker's two slots take at once (measured: 17-18 of 20, 11-18 under the race
	// detector). Without it the new workflow's quick start proves nothing.
	waiting, err := waitingTasks(ctx, c, ids)
	if err != nil {
		t.Fatal(err)
	}
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
	close(signalErrs)
	for err := range signalErrs {
		t.Errorf("a signaller stopped: %v", err)
	}
	t.Logf("the new workflow completed in %s; %d of %d busy workflows had a task waiting on the sticky queue when it started",
		time.Since(start), waiting, busy)
	if waiting < busy/4 {
		t.Errorf("%d of %d busy workflows had a task waiting when the new workflow started, want at least %d: the sticky queue had no backlog, and the test proves nothing",
			waiting, busy, busy/4)
	}
	if fedToTheEnd.Load() {
		t.Errorf("the new workflow completed only after the sticky queue stopped being fed (%s): it waited for the backlog", time.Since(start))
	}
}

// waitingTasks counts the workflows whose workflow task is scheduled and not yet started: each such task
// waits for a poll (on the worker's sticky queue, the workflows being in its cache).
func waitingTasks(ctx context.Context, c client.Client, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return 0, fmt.Errorf("describe %s: %w", id, err)
		}
		if d.GetPendingWorkflowTask().GetState() == enumspb.PENDING_WORKFLOW_TASK_STATE_SCHEDULED {
			n++
		}
	}
	return n, nil
}
