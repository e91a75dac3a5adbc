package workflows

import (
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
)

// Register puts the order saga's workflows (OrderWorkflow, RefundWorkflow, ReconcileWorkflow,
// IdempotencyCleanupWorkflow) and activities on a worker.
func Register(r worker.Registry, a *activities.Activities) {
	r.RegisterWorkflow(OrderWorkflow)
	r.RegisterWorkflow(RefundWorkflow)
	r.RegisterWorkflow(ReconcileWorkflow)
	r.RegisterWorkflow(IdempotencyCleanupWorkflow)
	r.RegisterActivity(a)
}
