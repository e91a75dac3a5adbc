package workflows

import (
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga/activities"
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
	// DefaultReconcileMoneyDays: the money step checks today and yesterday (UTC), so the run just after
	// midnight still closes the day before.
	DefaultReconcileMoneyDays = 2
	// MaxReconcileMoneyDays bounds the days one run checks.
	MaxReconcileMoneyDays = 366
	// DefaultRefundUnsentAfter: a refund recorded longer ago and neither sent nor refused is a money finding
	// (refund_unsent); config.DefaultRefundUnsentAfter (REFUND_UNSENT_AFTER unset) is the same, which
	// internal/platform's tests check.
	DefaultRefundUnsentAfter = 15 * time.Minute
)

// moneyStepChange is the workflow.GetVersion change ID of the money step.
const moneyStepChange = "reconcile-money"

// ReconcileResult is what one run found and did: the stock part (Redis against the database, leaked orders)
// and the money part. Its JSON keeps the stock summary's fields at the top level.
type ReconcileResult struct {
	activities.ReconcileSummary
	Money activities.MoneySummary
}

func (r ReconcileResult) String() string {
	return r.ReconcileSummary.String() + "\n" + r.Money.String()
}

// ReconcileInput configures one reconciliation run; the zero value means the defaults.
type ReconcileInput struct {
	// BatchSize is the SKUs (and open orders) one activity handles (0 = DefaultReconcileBatch).
	BatchSize int
	// Grace: 0 = DefaultReconcileGrace; negative = none (tests that corrupt Redis on purpose).
	Grace time.Duration
	// MoneyDays is how many UTC days up to today the money step checks (0 = DefaultReconcileMoneyDays).
	MoneyDays int
	// RefundUnsentAfter: the money step reports a refund recorded longer ago and neither sent nor refused
	// (0 = DefaultRefundUnsentAfter).
	RefundUnsentAfter time.Duration
}

func (in ReconcileInput) refundUnsentAfter() time.Duration {
	if in.RefundUnsentAfter <= 0 {
		return DefaultRefundUnsentAfter
	}
	return in.RefundUnsentAfter
}

func (in ReconcileInput) moneyDays() int {
	if in.MoneyDays <= 0 {
		return DefaultReconcileMoneyDays
	}
	return min(in.MoneyDays, MaxReconcileMoneyDays)
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
