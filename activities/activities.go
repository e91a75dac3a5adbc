package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/killpoint"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/retention"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Activities are the order saga's Temporal activities. Register a *Activities with a worker; workflows refer to
// the methods through a nil *Activities.
type Activities struct {
	Redis *redisstock.Store
	Store *sqlstore.Store

	// DBFallback lets ReserveLine fall back to the database deduct alone when Redis cannot be reached
	// (RESERVE_DB_FALLBACK; see reconcile.Reserver). Off: the reserve fails retryably until Redis is back.
	DBFallback bool
	// Probe tells reconciliation whether an order's workflow is gone (nil: never).
	Probe reconcile.OrderProbe
	// Metrics counts reconciliation, cold loads and fallbacks (nil: not counted).
	Metrics *reconcile.Metrics
	// CleanupMetrics counts the idempotency cleanup (nil: not counted).
	CleanupMetrics *retention.Metrics

	fallback reconcile.FallbackState
}

// LineInput names one line of one order.
type LineInput struct {
	OrderID string
	// UserID is the buyer, whose units of the SKU count against its per-user limit ("" in the histories of
	// workflows started before the limit existed: not counted in Redis; the deduct still enforces it).
	UserID string
	SKU    string
	Qty    int64
	// Sold (release only) says the database kept the order's units sold (its restore answered Sold: the
	// order is PAID), so a confirmed hold is not given back.
	Sold bool
	// Shards is the SKU's shard count fixed for the order (workflows.OrderInput.Shards; 0 or 1: not split).
	Shards int `json:",omitempty"`
}

// RestoreInput is the compensation of an order's deduct.
type RestoreInput struct {
	OrderID string
	Lines   []ordersaga.Line
}

// ConfirmInput drops the Redis holds of an order whose deduct committed.
type ConfirmInput struct {
	OrderID string
	SKUs    []string
	// Shards is the order's shard count of each split SKU (workflows.OrderInput.Shards).
	Shards map[string]int `json:",omitempty"`
}

// DeductInput is what DeductOrder takes: the order's deduct and the holds to drop once it committed.
type DeductInput struct {
	ordersaga.DeductInput
	// ConfirmHolds names the lines whose Redis holds DeductOrder drops once the deduct committed (the lines
	// the reserve held in Redis); empty, it drops none and the workflow confirms them itself (ConfirmLines).
	ConfirmHolds []string
	// Shards is the order's shard count of each split SKU (workflows.OrderInput.Shards).
	Shards map[string]int `json:",omitempty"`
}

// confirmBudget bounds the confirm that follows a committed deduct in DeductOrder: the deduct's answer does not
// wait on a slow Redis for longer, since a hold left behind is only bookkeeping until reconciliation, finding
// the order's deduct standing, confirms it.
const confirmBudget = 2 * time.Second

// MarkPaidInput applies one payment to one order.
type MarkPaidInput struct {
	Payment ordersaga.PaymentRecord
	PaidAt  time.Time
}

func nonRetryable(errType string, err error, details ...any) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), errType, err, details...)
}

// businessError turns the store's business outcomes into non-retryable application errors with a type;
// anything else (network, timeouts, conflicts) stays retryable.
func businessError(err error) error {
	if sku, ok := ordersaga.IsSoldOut(err); ok {
		return nonRetryable(ErrTypeSoldOut, err, sku)
	}
	if le, ok := ordersaga.IsLimitExceeded(err); ok {
		return nonRetryable(ErrTypeLimitExceeded, err, *le)
	}
	switch {
	case errors.Is(err, ordersaga.ErrCompensated):
		return nonRetryable(ErrTypeCompensated, err)
	case errors.Is(err, ordersaga.ErrAmountOverflow):
		return nonRetryable(ErrTypeAmountOverflow, err)
	case errors.Is(err, ordersaga.ErrUnknownSKU):
		var u *ordersaga.UnknownSKUError
		if errors.As(err, &u) {
			return nonRetryable(ErrTypeUnknownSKU, err, u.SKU)
		}
		return nonRetryable(ErrTypeUnknownSKU, err)
	}
	return err
}

// ReserveLine holds one line's units in Redis (reconcile.Reserver): a SKU whose counter is missing is loaded
// from the database first (cold start), failing retryably if it still cannot be, or non-retryably when the
// SKU does not exist at all. When Redis cannot be reached and DBFallback is on, it holds nothing and answers
// ordersaga.ReservedInDB: the order's DB deduct is then the only gate.
func (a *Activities) ReserveLine(ctx context.Context, in LineInput) (ordersaga.ReserveOutcome, error) {
	if in.OrderID == "" || in.SKU == "" || in.Qty <= 0 {
		return "", nonRetryable(ErrTypeBadInput, fmt.Errorf("reserve: order_id, sku and a positive qty are required (got %q, %q, %d)", in.OrderID, in.SKU, in.Qty))
	}
	r := reconcile.Reserver{Redis: a.Redis, Store: a.Store, DBFallback: a.DBFallback, Metrics: a.Metrics, State: &a.fallback}
	out, err := r.Reserve(ctx, in.Shards, in.OrderID, in.UserID, in.SKU, in.Qty)
	if errors.Is(err, ordersaga.ErrNotLoaded) {
		return "", failNotLoaded(in, err)
	}
	if err != nil {
		return "", businessError(err)
	}
	killpoint.Hit(killpoint.ReserveAfterScript, in.OrderID) // the hold is in Redis; the workflow has not heard of it
	return out, nil
}

// failNotLoaded is the reserve of a SKU that Redis has no counter for and that could not be loaded: it fails
// closed (never sells), retryably. Each failed attempt is logged with its whole error by the worker
// (platform.LocalActivityFailures): the workflow only hears the last attempt's, and when the reserve's
// schedule-to-close bound cuts that attempt short it is the deadline's, not the store's.
func failNotLoaded(in LineInput, err error) error {
	return temporal.NewApplicationErrorWithCause(err.Error(), ErrTypeNotLoaded, err, in.SKU)
}

// ReleaseLine gives back one line's Redis hold (or writes its tombstone). The units of a PAID order stay sold:
// the workflow says so when its restore answered Sold, and when it did not restore (a later life of a paid
// order's ID whose reserve failed compensates without one) the database's status says it.
func (a *Activities) ReleaseLine(ctx context.Context, in LineInput) (ordersaga.ReleaseOutcome, error) {
	sold := in.Sold
	if !sold {
		o, err := a.Store.Order(ctx, in.OrderID)
		switch {
		case err == nil:
			sold = o.Status == ordersaga.StatusPaid
		case !errors.Is(err, ordersaga.ErrNotFound):
			return "", err
		}
	}
	release := a.Redis.ReleaseIn
	if sold {
		release = a.Redis.ReleaseUnsoldIn
	}
	out, err := release(ctx, in.Shards, in.OrderID, in.UserID, in.SKU)
	if err != nil {
		return "", err
	}
	if out == ordersaga.TombstoneReleased {
		activity.GetLogger(ctx).Info("release before reserve: tombstone written", "sku", in.SKU, "order_id", in.OrderID)
	}
	return out, nil
}

// ConfirmLines drops the holds of an order whose deduct committed.
func (a *Activities) ConfirmLines(ctx context.Context, in ConfirmInput) error {
	return a.confirm(ctx, in.OrderID, in.SKUs, in.Shards)
}

func (a *Activities) confirm(ctx context.Context, orderID string, skus []string, shards map[string]int) error {
	for _, sku := range skus {
		if _, err := a.Redis.ConfirmIn(ctx, shards[sku], orderID, sku); err != nil {
			return fmt.Errorf("confirm %s: %w", sku, err)
		}
	}
	return nil
}

// DeductOrder takes every line of the order from the database in one transaction and records the order, then
// drops the holds of in.ConfirmHolds in Redis: the deduct's answer stands whatever the confirm does (a hold
// it could not confirm within confirmBudget is left for reconciliation to confirm).
func (a *Activities) DeductOrder(ctx context.Context, in DeductInput) (ordersaga.DeductResult, error) {
	if err := ordersaga.CheckStored("deduct", in.OrderID, in.Lines); err != nil {
		return ordersaga.DeductResult{}, nonRetryable(ErrTypeBadInput, err)
	}
	res, err := a.Store.Deduct(ctx, in.DeductInput)
	if err != nil {
		return ordersaga.DeductResult{}, businessError(err)
	}
	killpoint.Hit(killpoint.DeductAfterCommit, in.OrderID) // committed; the workflow has not heard of it
	if len(in.ConfirmHolds) > 0 {
		cctx, cancel := context.WithTimeout(ctx, confirmBudget)
		defer cancel()
		if err := a.confirm(cctx, in.OrderID, in.ConfirmHolds, in.Shards); err != nil {
			activity.GetLogger(ctx).Warn("confirm holds failed; reconciliation will confirm them", "order_id", in.OrderID, "error", err)
		}
	}
	return res, nil
}

// RestoreOrder gives back what DeductOrder took (or writes tombstones when it took nothing).
func (a *Activities) RestoreOrder(ctx context.Context, in RestoreInput) ([]ordersaga.RestoreLine, error) {
	if err := ordersaga.CheckStored("restore", in.OrderID, in.Lines); err != nil {
		return nil, nonRetryable(ErrTypeBadInput, err)
	}
	out, err := a.Store.Restore(ctx, in.OrderID, in.Lines)
	if err != nil {
		return nil, err
	}
	killpoint.Hit(killpoint.CompensateMiddle, in.OrderID) // the database is restored, the Redis release not run yet
	for _, l := range out {
		if l.Tombstone {
			activity.GetLogger(ctx).Info("restore before deduct: tombstone written", "sku", l.SKU, "order_id", in.OrderID)
		}
	}
	return out, nil
}

// CloseOrder records the final status of an order that was not paid, and returns the order as the database
// now holds it: a status other than the one asked for means the database had decided first (a PAID order
// stays PAID), and the workflow takes the database's word.
func (a *Activities) CloseOrder(ctx context.Context, rec ordersaga.OrderRecord) (ordersaga.OrderRecord, error) {
	return a.Store.CloseOrder(ctx, rec)
}

// MarkPaid applies a payment: the order becomes PAID and the payment is recorded as applied.
func (a *Activities) MarkPaid(ctx context.Context, in MarkPaidInput) error {
	err := a.Store.MarkPaid(ctx, in.Payment, in.PaidAt)
	if errors.Is(err, ordersaga.ErrOrderNotPayable) {
		return nonRetryable("OrderNotPayable", err)
	}
	return businessError(err)
}

// RecordPayment records a payment that was not applied: refunded (it came late or twice) or rejected (wrong
// amount). The refund itself is the payment provider's call, out of scope here: it is recorded and logged
// once, keyed by the event ID.
func (a *Activities) RecordPayment(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
	rec, inserted, err := a.Store.RecordPayment(ctx, p)
	if err != nil {
		return ordersaga.PaymentRecord{}, businessError(err)
	}
	if inserted && rec.Result.Refunds() {
		activity.GetLogger(ctx).Info("payment refunded", "event_id", rec.EventID, "order_id", rec.OrderID,
			"amount_cents", rec.AmountCents, "currency", rec.Currency, "reason", rec.Detail)
	}
	return rec, nil
}
