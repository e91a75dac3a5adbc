package workflows

import (
	"strconv"
	"time"
)

// ReconcileScheduleID is the Temporal Schedule that starts ReconcileWorkflow; its runs get workflow IDs
// ReconcileScheduleID + "-" + the scheduled time (Temporal appends it).
const ReconcileScheduleID = "ordersaga-reconcile"

// ReconcileOnceWorkflowID is the workflow ID of an on-demand run started at t (the reconcile command).
func ReconcileOnceWorkflowID(t time.Time) string {
	return ReconcileScheduleID + "-once-" + strconv.FormatInt(t.UnixNano(), 10)
}

// Defaults of a reconciliation run.
const (
	DefaultReconcileInterval = time.Minute
	DefaultReconcileBatch    = 200
	// DefaultReconcileGrace leaves alone the holds and open orders younger than this: long enough for a live
	// order to go from reserve to deduct to confirm, or to finish its compensation.
	DefaultReconcileGrace = 2 * time.Minute
)

// ReconcileInput configures one reconciliation run; the zero value means the defaults.
type ReconcileInput struct {
	// BatchSize is the SKUs (and open orders) one activity handles (0 = DefaultReconcileBatch).
	BatchSize int
	// Grace: 0 = DefaultReconcileGrace; negative = none (tests that corrupt Redis on purpose).
	Grace time.Duration
}

func (in ReconcileInput) batch() int {
	if in.BatchSize <= 0 {
		return DefaultReconcileBatch
	}
	return in.BatchSize
}

func (in ReconcileInput) grace() time.Duration {
	switch {
	case in.Grace == 0:
		return DefaultReconcileGrace
	case in.Grace < 0:
		return 0
	}
	return in.Grace
}
