package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// acts is only used to name activity methods; the worker registers the real instance.
var acts *activities.Activities

// OrderWorkflow is the saga of one order: reserve every line in Redis (all or nothing), deduct every line
// in the database, wait for the payment signal until the deadline, and compensate (restore the DB, then
// release Redis) on sold out, failure, timeout or cancel. It never fails once its input is valid: every
// outcome is a final status.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (ordersaga.Order, error) {
	if err := ValidateInput(in); err != nil {
		return ordersaga.Order{}, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeBadInput, err)
	}
	w := newOrderWorkflow(ctx, in)
	if err := w.setup(ctx); err != nil {
		return ordersaga.Order{}, err
	}
	return w.run(ctx)
}

type orderWorkflow struct {
	in     OrderInput
	order  ordersaga.Order
	logger log.Logger

	payments, cancels *inbox // by signal and by update (order_messages.go)
	drained           bool   // the inboxes were drained; nothing takes messages any more

	soldOutSKU, unknownSKU string
	limit                  *ordersaga.LimitExceededError // the per-user limit a line would have passed
	// reserveStarted/deductStarted: a step that was started is compensated whatever it answered, because
	// an attempt may have landed after its timeout (the tombstones make that safe).
	reserveStarted, deductStarted bool
	// held names the lines whose units the reserve holds in Redis (not those reserved in the database alone).
	held        []string
	compensated bool
	// steps runs the steps that must succeed (must_succeed.go).
	steps *mustSucceed
	// payResults remembers what became of each payment event this run has seen, once its row is written
	// (lookups only); payErrs the events whose row could not be written; recording the events whose refund
	// or rejection is being recorded.
	payResults map[string]ordersaga.PaymentResult
	payErrs    map[string]error
	recording  map[string]bool
}

// ValidateInput checks an OrderInput; the API validates the same before it starts a workflow.
func ValidateInput(in OrderInput) error {
	if !ordersaga.ValidOrderID(in.OrderID) {
		return fmt.Errorf("order input: order_id %q must be 1-64 chars of A-Za-z0-9._:-", in.OrderID)
	}
	if !ordersaga.ValidName(in.UserID) {
		return fmt.Errorf("order input: user_id %q must be 1-64 chars of A-Za-z0-9._-", in.UserID)
	}
	if len(in.Currency) != 3 {
		return fmt.Errorf("order input: currency %q must be a 3-letter ISO 4217 code", in.Currency)
	}
	if p := ordersaga.NewOrderRules.CheckLines(in.Lines); p != nil {
		switch p.Fault {
		case ordersaga.FaultCount:
			return fmt.Errorf("order input: lines: want 1-%d, got %d", ordersaga.MaxLines, p.Count)
		case ordersaga.FaultQty:
			return fmt.Errorf("order input: %s %d must be 1-%d", p.Field(), in.Lines[p.Line].Qty, ordersaga.MaxQty)
		case ordersaga.FaultDuplicate:
			return fmt.Errorf("order input: %s %q appears twice", p.Field(), in.Lines[p.Line].SKU)
		}
		return fmt.Errorf("order input: %s %q must be 1-64 chars of A-Za-z0-9._-", p.Field(), in.Lines[p.Line].SKU)
	}
	if in.PaymentTimeout < 0 || in.PaymentTimeout > MaxPaymentTimeout {
		return fmt.Errorf("order input: payment timeout %s must be between 0 and %s", in.PaymentTimeout, MaxPaymentTimeout)
	}
	if in.StuckAfter < 0 || in.StuckAfter > MaxStuckAfter {
		return fmt.Errorf("order input: stuck after %s must be between 0 and %s", in.StuckAfter, MaxStuckAfter)
	}
	return nil
}

func newOrderWorkflow(ctx workflow.Context, in OrderInput) *orderWorkflow {
	if in.PaymentTimeout == 0 {
		in.PaymentTimeout = DefaultPaymentTimeout
	}
	lines := make([]ordersaga.Line, len(in.Lines))
	for i, l := range in.Lines {
		lines[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty}
	}
	logger := log.With(workflow.GetLogger(ctx), "order_id", in.OrderID)
	return &orderWorkflow{
		in:         in,
		order:      ordersaga.Order{OrderID: in.OrderID, UserID: in.UserID, Status: ordersaga.StatusReserving, Lines: lines},
		logger:     logger,
		steps:      newMustSucceed(logger, in.StuckAfter),
		payResults: map[string]ordersaga.PaymentResult{},
		payErrs:    map[string]error{},
		recording:  map[string]bool{},
	}
}

func (w *orderWorkflow) setup(ctx workflow.Context) error {
	if err := w.setupMessages(ctx); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (ordersaga.Order, error) {
		return w.view(), nil
	}); err != nil {
		return fmt.Errorf("set query handler: %w", err)
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateReservation, func(ctx workflow.Context) (Reservation, error) {
		if err := workflow.Await(uncancelled(ctx), func() bool { return w.order.Status != ordersaga.StatusReserving }); err != nil {
			return Reservation{}, err
		}
		return Reservation{Order: w.view(), SoldOutSKU: w.soldOutSKU, UnknownSKU: w.unknownSKU, LimitExceeded: w.limit}, nil
	}); err != nil {
		return fmt.Errorf("set update handler: %w", err)
	}
	// A start that carried the attributes (StartSearchAttributes) leaves nothing to upsert; the start event
	// says which, so replay takes the same branch.
	if workflow.GetTypedSearchAttributes(ctx).ContainsKey(SAOrderStatus) {
		return nil
	}
	return w.upsert(ctx, startAttributes(w.order.Lines)...)
}

func (w *orderWorkflow) run(ctx workflow.Context) (ordersaga.Order, error) {
	if err := w.reserve(ctx); err != nil {
		return w.reject(ctx, err)
	}
	if err := w.deduct(ctx); err != nil {
		return w.reject(ctx, err)
	}
	if err := w.setStatus(ctx, ordersaga.StatusAwaitingPayment, ""); err != nil {
		return ordersaga.Order{}, err
	}
	if !w.in.ConfirmInDeduct {
		w.confirm(ctx) // a history from before ConfirmInDeduct
	}
	if err := w.awaitPayment(ctx); err != nil {
		return ordersaga.Order{}, err
	}
	w.refundLatePayments(ctx)
	return w.view(), nil
}

// view is a copy of the order, safe to hand out of the workflow.
func (w *orderWorkflow) view() ordersaga.Order {
	o := w.order
	o.Lines = append([]ordersaga.Line(nil), w.order.Lines...)
	return o
}

func (w *orderWorkflow) upsert(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) error {
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		return fmt.Errorf("upsert search attributes: %w", err)
	}
	return nil
}

func (w *orderWorkflow) setStatus(ctx workflow.Context, s ordersaga.Status, reason string) error {
	w.order.Status = s
	w.order.ClosedReason = reason
	updates := []temporal.SearchAttributeUpdate{SAOrderStatus.ValueSet(string(s))}
	if s == ordersaga.StatusAwaitingPayment && w.order.PayBy != nil {
		updates = append(updates, SAPaymentDeadline.ValueSet(*w.order.PayBy))
	}
	w.logger.Info("order status", "status", string(s), "reason", reason)
	return w.upsert(ctx, updates...)
}

// reserve holds every line in Redis, in parallel; any line's failure fails the reservation.
func (w *orderWorkflow) reserve(ctx workflow.Context) error {
	actx := workflow.WithLocalActivityOptions(ctx, reserveOptions)
	futures := make([]workflow.Future, len(w.order.Lines))
	for i, l := range w.order.Lines {
		futures[i] = workflow.ExecuteLocalActivity(actx, acts.ReserveLine,
			activities.LineInput{OrderID: w.in.OrderID, UserID: w.in.UserID, SKU: l.SKU, Qty: l.Qty, Shards: w.in.Shards[l.SKU]})
	}
	w.reserveStarted = true
	var first error
	for i, f := range futures {
		var out ordersaga.ReserveOutcome
		if err := f.Get(ctx, &out); err != nil {
			w.noteBusinessFailure(err, w.order.Lines[i].SKU)
			if first == nil {
				first = fmt.Errorf("reserve %s: %w", w.order.Lines[i].SKU, err)
			}
			continue
		}
		if out != ordersaga.ReservedInDB {
			w.held = append(w.held, w.order.Lines[i].SKU)
		}
	}
	return first
}

// deduct takes every line from the database in one transaction and prices the order.
func (w *orderWorkflow) deduct(ctx workflow.Context) error {
	payBy := workflow.Now(ctx).Add(w.in.PaymentTimeout).UTC()
	w.deductStarted = true
	var res ordersaga.DeductResult
	in := activities.DeductInput{DeductInput: ordersaga.DeductInput{
		OrderID: w.in.OrderID, UserID: w.in.UserID, Currency: w.in.Currency, PayBy: payBy, Lines: w.order.Lines,
	}}
	if w.in.ConfirmInDeduct {
		in.ConfirmHolds, in.Shards = w.held, w.in.Shards
	}
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, deductOptions), acts.DeductOrder, in).Get(ctx, &res)
	if err != nil {
		w.noteBusinessFailure(err, "")
		return fmt.Errorf("deduct: %w", err)
	}
	w.order.Lines = res.Lines
	w.order.AmountCents = res.AmountCents
	w.order.PayBy = &payBy
	return nil
}

// noteBusinessFailure remembers which SKU made the order fail (the first of each kind), for the API's answer:
// sku is the line's, or "" to read it from the error's details (the deduct's, which covers every line).
func (w *orderWorkflow) noteBusinessFailure(err error, sku string) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return
	}
	if sku == "" && appErr.HasDetails() && appErr.Type() != activities.ErrTypeLimitExceeded {
		_ = appErr.Details(&sku)
	}
	switch appErr.Type() {
	case activities.ErrTypeSoldOut:
		if w.soldOutSKU == "" {
			w.soldOutSKU = sku
		}
	case activities.ErrTypeUnknownSKU:
		if w.unknownSKU == "" {
			w.unknownSKU = sku
		}
	case activities.ErrTypeLimitExceeded:
		var le ordersaga.LimitExceededError
		if w.limit == nil && appErr.HasDetails() && appErr.Details(&le) == nil {
			w.limit = &le
		}
	}
}

// confirm drops the Redis holds once the DB owns the deduct, as a step of its own: the histories of workflows
// started without ConfirmInDeduct (the deduct does it since). Failing here is harmless (the hold stays in the
// holds hash, reconciliation drops it), so the order goes on either way.
func (w *orderWorkflow) confirm(ctx workflow.Context) {
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, confirmOptions), acts.ConfirmLines,
		activities.ConfirmInput{OrderID: w.in.OrderID, SKUs: lineSKUs(w.order.Lines), Shards: w.in.Shards}).Get(ctx, nil)
	if err != nil {
		w.logger.Warn("confirm holds failed; reconciliation will drop them", "error", err)
	}
}

// reject closes an order whose reservation or deduct failed: status REJECTED at once (the API answers),
// then compensation of every step that was started, then the record.
func (w *orderWorkflow) reject(ctx workflow.Context, cause error) (ordersaga.Order, error) {
	// The reason is for the buyer and the orders table: a kind, never an error chain (hosts, SQL). The whole
	// cause goes to the log.
	reason := ordersaga.RejectReason{Kind: ordersaga.RejectFailed, Failure: failureKind(cause)}
	w.logger.Warn("reservation failed", "error", cause)
	switch {
	case w.soldOutSKU != "":
		reason = ordersaga.RejectReason{Kind: ordersaga.RejectSoldOut, SKU: w.soldOutSKU}
	case w.unknownSKU != "":
		reason = ordersaga.RejectReason{Kind: ordersaga.RejectUnknownSKU, SKU: w.unknownSKU}
	case w.limit != nil:
		reason = ordersaga.RejectReason{Kind: ordersaga.RejectLimit, SKU: w.limit.SKU, Limit: w.limit.Limit, Held: w.limit.Held}
	}
	if err := w.setStatus(ctx, ordersaga.StatusRejected, reason.String()); err != nil {
		return ordersaga.Order{}, err
	}
	w.compensate(ctx)
	w.record(ctx)
	w.refundLatePayments(ctx)
	return w.view(), nil
}

// compensate undoes every started step, steps that must succeed (a cancelled workflow still cleans up):
// the DB restore first, then the Redis release, so Redis never promises more than the DB has (I3).
func (w *orderWorkflow) compensate(ctx workflow.Context) {
	// sold names the lines the database kept sold (the order is PAID: a second life of its order ID, or a
	// payment that won the order's lock): their confirmed Redis holds stay confirmed.
	sold := map[string]bool{}
	if w.deductStarted {
		var restored []ordersaga.RestoreLine
		if err := w.steps.run(ctx, &restored, acts.RestoreOrder,
			activities.RestoreInput{OrderID: w.in.OrderID, Lines: w.order.Lines}); err != nil {
			w.logger.Error("restore failed", "error", err)
		}
		for _, l := range restored {
			sold[l.SKU] = l.Sold
		}
	}
	if w.reserveStarted {
		releases := make([]*step, len(w.order.Lines))
		for i, l := range w.order.Lines {
			releases[i] = w.steps.start(ctx, acts.ReleaseLine,
				activities.LineInput{OrderID: w.in.OrderID, UserID: w.in.UserID, SKU: l.SKU, Qty: l.Qty, Sold: sold[l.SKU],
					Shards: w.in.Shards[l.SKU]})
		}
		for i, r := range releases {
			if err := r.get(nil); err != nil {
				w.logger.Error("release failed", "sku", w.order.Lines[i].SKU, "error", err)
			}
		}
	}
	w.compensated = true
}

// record writes the closed order to the database.
// closeStatusChange is the workflow.GetVersion change ID of the status upsert when the database closed the
// order otherwise (record).
const closeStatusChange = "close-status-from-database"

func (w *orderWorkflow) record(ctx workflow.Context) {
	rec := ordersaga.OrderRecord{
		OrderID: w.in.OrderID, UserID: w.in.UserID, Status: w.order.Status, Currency: w.in.Currency,
		PayBy: w.order.PayBy, ClosedReason: w.order.ClosedReason, Lines: w.order.Lines,
	}
	var stored ordersaga.OrderRecord
	if err := w.steps.run(ctx, &stored, acts.CloseOrder, rec); err != nil {
		w.logger.Error("record closed order failed", "error", err)
		return
	}
	// The database had decided first (a PAID order stays PAID): the order is what the database says.
	// (Histories recorded before CloseOrder returned the record carry no status here.)
	if stored.Status != "" && stored.Status != w.order.Status {
		w.logger.Warn("the database closed the order otherwise; taking its word", "status", string(w.order.Status),
			"database_status", string(stored.Status))
		w.order.Status, w.order.ClosedReason, w.order.PaidAt = stored.Status, stored.ClosedReason, stored.PaidAt
		// The upsert is a command later code added: a history whose CloseOrder result (written by a newer
		// activity worker) says otherwise while an older workflow worker recorded no upsert replays without it.
		if workflow.GetVersion(ctx, closeStatusChange, workflow.DefaultVersion, 1) == 1 {
			if err := w.upsert(ctx, SAOrderStatus.ValueSet(string(stored.Status))); err != nil {
				w.logger.Error("upsert status", "error", err)
			}
		}
	}
}

// failureKind names what made a reservation fail, in a few words fit for a buyer and a 255-character column:
// the error type of a business or activity failure, "timeout", or "cancelled" (a cancel request of the
// workflow cut the step short).
func failureKind(err error) string {
	var (
		appErr      *temporal.ApplicationError
		timeoutErr  *temporal.TimeoutError
		canceledErr *temporal.CanceledError
	)
	switch {
	case errors.As(err, &appErr) && appErr.Type() != "" && !strings.ContainsAny(appErr.Type(), "*."):
		return appErr.Type() // one of ours (NotLoaded, Compensated, ...), not a Go type name
	case errors.As(err, &timeoutErr):
		return "timeout"
	case errors.As(err, &canceledErr):
		return "cancelled"
	case errors.As(err, &appErr):
		return "error"
	}
	return "internal error"
}

// uncancelled is a context of ctx's that a cancel request of the workflow does not end, for an update
// handler's wait: the answer is what became of the message, whatever the workflow was asked meanwhile.
func uncancelled(ctx workflow.Context) workflow.Context {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return dctx
}

// close ends an unpaid order: compensate, then record.
func (w *orderWorkflow) close(ctx workflow.Context, s ordersaga.Status, reason string) error {
	if err := w.setStatus(ctx, s, reason); err != nil {
		return err
	}
	w.compensate(ctx)
	w.record(ctx)
	return nil
}
