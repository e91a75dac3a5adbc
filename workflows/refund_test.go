package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

func TestRefundWorkflow_RecordsTheEventAsRefunded(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(RefundWorkflow)
	env.RegisterActivity(&activities.Activities{})
	var got []ordersaga.PaymentRecord
	var a *activities.Activities
	env.OnActivity(a.RecordPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
			got = append(got, p)
			return p, nil
		}).Once()

	in := ordersaga.PaymentRecord{EventID: "evt-late", OrderID: "o-1", AmountCents: 1998, Currency: "CNY",
		Result: ordersaga.PaymentApplied} // whatever the caller says, a refund is a refund
	env.ExecuteWorkflow(RefundWorkflow, in)
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var rec ordersaga.PaymentRecord
	if err := env.GetWorkflowResult(&rec); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Result != ordersaga.PaymentRefunded || got[0].EventID != "evt-late" || got[0].Detail == "" {
		t.Errorf("RecordPayment got %+v, want one refunded record with a detail", got)
	}
	if rec.Result != ordersaga.PaymentRefunded {
		t.Errorf("result %+v", rec)
	}
	if RefundWorkflowID("evt-late") != "refund-evt-late" {
		t.Errorf("RefundWorkflowID = %q", RefundWorkflowID("evt-late"))
	}
	env.AssertExpectations(t)
}
