package platform_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// logLines is the lines of log with msg in them.
func logLines(log *testenv.SyncBuffer, msg string) []string {
	var out []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

// flakyStep fails its first two attempts with an error of its own (a Redis that refuses, say) and succeeds
// on the third.
func flakyStep(ctx context.Context) (string, error) {
	if n := activity.GetInfo(ctx).Attempt; n < 3 {
		return "", fmt.Errorf("dial tcp 10.0.0.7:6379: connection refused (attempt %d)", n)
	}
	return "held", nil
}

// decidedStep answers a decided outcome: a non-retryable application error the workflow acts on.
func decidedStep(context.Context) error {
	return temporal.NewNonRetryableApplicationError("SKU-1 is sold out", "SoldOut", nil)
}

// remoteStep is a regular activity that fails once: the SDK logs its failed attempt itself.
func remoteStep(ctx context.Context) error {
	if activity.GetInfo(ctx).Attempt < 2 {
		return errors.New("remote step failed on purpose")
	}
	return nil
}

func stepsWorkflow(ctx workflow.Context) (string, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5},
	})
	var held string
	if err := workflow.ExecuteLocalActivity(lctx, flakyStep).Get(ctx, &held); err != nil {
		return "", err
	}
	var app *temporal.ApplicationError
	if err := workflow.ExecuteLocalActivity(lctx, decidedStep).Get(ctx, nil); !errors.As(err, &app) || app.Type() != "SoldOut" {
		return "", fmt.Errorf("decided step: %v, want SoldOut", err)
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 10 * time.Millisecond, BackoffCoefficient: 1, MaximumAttempts: 5},
	})
	if err := workflow.ExecuteActivity(actx, remoteStep).Get(ctx, nil); err != nil {
		return "", err
	}
	return held, nil
}

// TestLocalActivityFailures_EveryFailedAttemptIsLoggedWithItsError: each failed attempt of a local activity
// is in the worker's log at WARN with its own error, its attempt, its activity type and its workflow; a
// decided outcome (non-retryable) only at DEBUG; a regular activity's failure is left to the SDK's own line.
func TestLocalActivityFailures_EveryFailedAttemptIsLoggedWithItsError(t *testing.T) {
	srv := sagatest.NewServer(t)
	logs := &testenv.SyncBuffer{}
	c := srv.NewClientWithOptions(client.Options{
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	})
	const queue = "local-activity-failures"
	w := worker.New(c, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{&platform.LocalActivityFailures{}}})
	w.RegisterWorkflow(stepsWorkflow)
	w.RegisterActivity(flakyStep)
	w.RegisterActivity(decidedStep)
	w.RegisterActivity(remoteStep)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "steps-1", TaskQueue: queue}, stepsWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var held string
	if err := run.Get(ctx, &held); err != nil || held != "held" {
		t.Fatalf("workflow: %q, %v; want held", held, err)
	}

	var flaky, decided, remote []string
	for _, l := range logLines(logs, platform.LocalActivityFailed) {
		switch {
		case strings.Contains(l, "ActivityType=flakyStep"):
			flaky = append(flaky, l)
		case strings.Contains(l, "ActivityType=decidedStep"):
			decided = append(decided, l)
		default:
			remote = append(remote, l)
		}
	}
	if len(flaky) != 2 {
		t.Fatalf("logged %d failed attempts of the flaky local activity, want 2 (attempts 1 and 2):\n%s", len(flaky), strings.Join(flaky, "\n"))
	}
	for i, l := range flaky {
		n := i + 1
		for _, want := range []string{"level=WARN", fmt.Sprintf("Attempt=%d", n), fmt.Sprintf("connection refused (attempt %d)", n), "WorkflowID=steps-1"} {
			if !strings.Contains(l, want) {
				t.Errorf("failed attempt %d logged as %q: no %q", n, l, want)
			}
		}
	}
	if len(decided) != 1 || !strings.Contains(decided[0], "level=DEBUG") || !strings.Contains(decided[0], "sold out") {
		t.Errorf("the decided outcome logged as %q, want one DEBUG line with its error", decided)
	}
	if len(remote) != 0 {
		t.Errorf("a regular activity's failure logged as a local one's: %q", remote)
	}
	if sdk := logLines(logs, "remote step failed on purpose"); len(sdk) == 0 {
		t.Errorf("the SDK did not log the regular activity's failed attempt (its own line, which this interceptor does not repeat)")
	}
}
