package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// A run ends with the money step: once, with the run's ID and the default days, its summary in the result.
func TestReconcileWorkflow_EndsWithTheMoneyStep(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(ReconcileWorkflow)
	env.RegisterActivity(&activities.Activities{})
	var a *activities.Activities
	done := activities.ReconcileBatchResult{Summary: activities.ReconcileSummary{SKUs: 2}, Done: true}
	env.OnActivity(a.ReconcileLeaks, mock.Anything, mock.Anything).Return(activities.ReconcileBatchResult{Done: true}, nil).Once()
	env.OnActivity(a.ReconcileSKUs, mock.Anything, mock.Anything).Return(done, nil).Once()
	env.OnActivity(a.ReconcileFinish, mock.Anything, mock.Anything, mock.Anything).Return(nil).Once()
	var got []activities.ReconcileMoneyInput
	env.OnActivity(a.ReconcileMoney, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileMoneyInput) (activities.MoneySummary, error) {
			got = append(got, in)
			return activities.MoneySummary{Findings: 1, Recorded: 1, ByKind: map[string]int{sqlstore.KindAppliedNotPaid: 1}}, nil
		}).Once()

	env.ExecuteWorkflow(ReconcileWorkflow, ReconcileInput{})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var res ReconcileResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Days != DefaultReconcileMoneyDays || got[0].RunID == "" || got[0].RefundUnsentAfter != DefaultRefundUnsentAfter {
		t.Errorf("ReconcileMoney got %+v, want one call with the run ID, %d days and the refunds' threshold %s", got,
			DefaultReconcileMoneyDays, DefaultRefundUnsentAfter)
	}
	if res.SKUs != 2 || res.Money.Findings != 1 || res.Money.ByKind[sqlstore.KindAppliedNotPaid] != 1 {
		t.Errorf("result = %+v", res)
	}
	env.AssertExpectations(t)
}

// The refunds' threshold of the input (REFUND_UNSENT_AFTER) reaches the money step; 0 means the default.
func TestReconcileWorkflow_PassesTheRefundsThresholdToTheMoneyStep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want time.Duration
	}{{0, DefaultRefundUnsentAfter}, {time.Hour, time.Hour}} {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflow(ReconcileWorkflow)
		env.RegisterActivity(&activities.Activities{})
		var a *activities.Activities
		done := activities.ReconcileBatchResult{Done: true}
		env.OnActivity(a.ReconcileLeaks, mock.Anything, mock.Anything).Return(done, nil).Once()
		env.OnActivity(a.ReconcileSKUs, mock.Anything, mock.Anything).Return(done, nil).Once()
		env.OnActivity(a.ReconcileFinish, mock.Anything, mock.Anything, mock.Anything).Return(nil).Once()
		var got time.Duration
		env.OnActivity(a.ReconcileMoney, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in activities.ReconcileMoneyInput) (activities.MoneySummary, error) {
				got = in.RefundUnsentAfter
				return activities.MoneySummary{}, nil
			}).Once()
		env.ExecuteWorkflow(ReconcileWorkflow, ReconcileInput{RefundUnsentAfter: c.in})
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
		}
		if got != c.want {
			t.Errorf("RefundUnsentAfter %s: the money step got %s, want %s", c.in, got, c.want)
		}
		env.AssertExpectations(t)
	}
}
