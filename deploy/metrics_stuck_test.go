package deploy_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/workflows"
)

// stuckStep makes a step that must succeed get stuck in the worker: RefundWorkflow's RecordPayment fails
// retryably for longer than workflows.StuckAfter, then succeeds, and the workflow counts
// workflows.MetricStepStuck through the worker's Temporal metrics handler, so the series shows on the
// worker's /metrics. On a real server that takes StuckAfter (2 minutes) of wall time (internal/e2e's
// TestStuckStep_MarkedAndCleared); the SDK's test environment runs the same workflow code on virtual time.
// Its series carries the tag step alone: the real worker's also carry namespace, task_queue and workflow_type,
// which no rule or dashboard query of deploy/ uses.
func (s *metricsStack) stuckStep(t *testing.T) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetMetricsHandler(s.workerSDK)
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))) // the failures are the point
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.RefundWorkflow)
	env.RegisterActivity(&activities.Activities{})
	var a *activities.Activities
	until := env.Now().Add(workflows.StuckAfter + time.Minute)
	env.OnActivity(a.RecordPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
			if env.Now().Before(until) {
				return ordersaga.PaymentRecord{}, errors.New("mysql: server has gone away")
			}
			return p, nil
		})
	env.ExecuteWorkflow(workflows.RefundWorkflow, ordersaga.PaymentRecord{EventID: "evt-stuck", OrderID: "o-stuck",
		AmountCents: 100, Currency: s.cfg.Currency})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("RefundWorkflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
}
