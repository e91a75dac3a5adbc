package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// A payment or a cancel reaches an order by one of two routes: a signal (payment services and the cancel
// signal: fire and forget) or an update (the webhook and the cancel endpoint, which need an answer). Past the
// entrance there is one path per kind: both routes end in the kind's inbox; the saga takes one message at a
// time out of the inboxes (next) and handles it in onPayment or onCancel, whichever route brought it; once
// the order is final it drains each inbox once (refundLatePayments). An update's handler only puts its
// message in the inbox and waits for the outcome (the payment's result once its row is written, the final
// order), on a context that a cancel request of the workflow does not end. A payment is checked the same way
// by both routes (ordersaga.CheckPayment): the update's validator refuses it, a signal that fails the check
// is dropped.

// inbox holds the messages of one kind until the saga takes them: the SDK buffers the kind's signals on
// their channel, put buffers the updates. Both buffers are read only here, and always in the same order:
// what the recorded histories were made with (TestReplay, TestReplayMessageOrder), since the order decides
// which activities run first; changing it needs a version (doc.go).
type inbox struct {
	signals workflow.ReceiveChannel
	updates workflow.Channel
}

func newInbox(ctx workflow.Context, signalName string) *inbox {
	return &inbox{signals: workflow.GetSignalChannel(ctx, signalName), updates: workflow.NewBufferedChannel(ctx, 1024)}
}

// put is the way in of a message brought by an update.
func (b *inbox) put(ctx workflow.Context, m any) { b.updates.Send(ctx, m) }

// addTo adds the inbox to sel: when sel picks it, receive gets the channel to Receive the message from. Of
// the messages already waiting sel picks a signal before an update; when none waits, the first to come.
func (b *inbox) addTo(sel workflow.Selector, receive func(c workflow.ReceiveChannel)) {
	for _, c := range []workflow.ReceiveChannel{b.signals, b.updates} {
		sel.AddReceive(c, func(c workflow.ReceiveChannel, _ bool) { receive(c) })
	}
}

// drain hands every message left to receive, which takes one from the channel it gets (ReceiveAsync) and
// reports whether there was one: the signals, then the updates, and again until a whole round finds none,
// because receive may block on an activity while more messages come.
func (b *inbox) drain(receive func(c workflow.ReceiveChannel) bool) {
	for found := true; found; {
		found = false
		for _, c := range []workflow.ReceiveChannel{b.signals, b.updates} {
			for receive(c) {
				found = true
			}
		}
	}
}

// setupMessages opens the inboxes and sets the pay and cancel update handlers.
func (w *orderWorkflow) setupMessages(ctx workflow.Context) error {
	w.payments = newInbox(ctx, SignalPayment)
	w.cancels = newInbox(ctx, SignalCancel)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePay, w.handlePay, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, p PaymentSignal) error {
			if problem := w.checkPayment(p); problem != nil {
				return fmt.Errorf("pay: %w", problem)
			}
			return nil
		},
	}); err != nil {
		return fmt.Errorf("set update handlers: %w", err)
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateCancel, w.handleCancel); err != nil {
		return fmt.Errorf("set update handlers: %w", err)
	}
	return nil
}

// checkPayment is the check of a payment's fields that every way in makes (ordersaga.CheckPayment).
func (w *orderWorkflow) checkPayment(p PaymentSignal) *ordersaga.PaymentProblem {
	return ordersaga.CheckPayment(p.EventID, w.in.OrderID, p.AmountCents, p.Currency)
}

// dropInvalidPaymentsChange is the workflow.GetVersion change ID of dropping a payment signal that fails
// checkPayment: histories from before handled one with an event ID as it came.
const dropInvalidPaymentsChange = "drop-invalid-payment-signals"

// dropsInvalid reports whether the payment p fails checkPayment and is dropped: logged and counted
// (MetricPaymentSignalsDropped), never handled. Only a signal can fail it here (the pay update's validator
// refused such a payment), or an update accepted before the validator checked as much (its history then has
// no version marker and the payment is handled as it was).
func (w *orderWorkflow) dropsInvalid(ctx workflow.Context, p PaymentSignal) bool {
	problem := w.checkPayment(p)
	if problem == nil {
		return false
	}
	// A payment without an event ID was always dropped.
	if p.EventID != "" && workflow.GetVersion(ctx, dropInvalidPaymentsChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	id := p.EventID
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	w.logger.Warn("invalid payment signal dropped", "field", problem.Field, "want", problem.Want, "event_id", id,
		"event_id_len", len(p.EventID), "amount_cents", p.AmountCents, "currency", p.Currency)
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"field": problem.Field}).Counter(MetricPaymentSignalsDropped).Inc(1)
	return true
}

// handlePay is the update route of a payment: the answer is what became of the payment's event, once its
// row is written.
func (w *orderWorkflow) handlePay(ctx workflow.Context, p PaymentSignal) (ordersaga.PaymentResult, error) {
	ctx = uncancelled(ctx)
	if _, seen := w.payResults[p.EventID]; seen {
		return ordersaga.PaymentDuplicate, nil
	}
	switch {
	case w.recording[p.EventID]:
		// Another delivery of the event is being recorded: this one answers what it did.
	case w.order.Status.Final() && w.drained:
		// Nothing takes messages any more: the late payment is refunded here.
		_ = w.refundLate(ctx, p) // its outcome is in payResults or payErrs
	default:
		w.payments.put(ctx, p)
	}
	if err := workflow.Await(ctx, func() bool { return w.decided(p.EventID) }); err != nil {
		return "", err
	}
	if err := w.payErrs[p.EventID]; err != nil {
		return "", err
	}
	return w.payResults[p.EventID], nil
}

// decided reports whether the payment event has an outcome: its row written, or the write failed for good.
func (w *orderWorkflow) decided(eventID string) bool {
	_, done := w.payResults[eventID]
	_, failed := w.payErrs[eventID]
	return done || failed
}

// handleCancel is the update route of a cancel: the answer is the order once it is final and compensated
// (or PAID, when it was too late to cancel).
func (w *orderWorkflow) handleCancel(ctx workflow.Context, reason string) (ordersaga.Order, error) {
	ctx = uncancelled(ctx)
	if !w.order.Status.Final() {
		w.cancels.put(ctx, CancelSignal{Reason: reason})
	}
	err := workflow.Await(ctx, func() bool {
		return w.order.Status.Final() && (w.compensated || w.order.Status == ordersaga.StatusPaid)
	})
	return w.view(), err
}

// awaitPayment handles messages until the order is paid, cancelled or expired.
func (w *orderWorkflow) awaitPayment(ctx workflow.Context) error {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	deadline := workflow.NewTimer(timerCtx, w.order.PayBy.Sub(workflow.Now(ctx)))
	var err error
	for w.order.Status == ordersaga.StatusAwaitingPayment && err == nil {
		err = w.next(ctx, deadline)
	}
	return err
}

// next handles one message, or the deadline. Of what already waits a payment goes first, then a cancel,
// the deadline last; when nothing waits, whatever comes first.
func (w *orderWorkflow) next(ctx workflow.Context, deadline workflow.Future) error {
	var err error
	sel := workflow.NewSelector(ctx)
	w.payments.addTo(sel, func(c workflow.ReceiveChannel) {
		var p PaymentSignal
		c.Receive(ctx, &p)
		err = w.onPayment(ctx, p)
	})
	w.cancels.addTo(sel, func(c workflow.ReceiveChannel) {
		var s CancelSignal
		c.Receive(ctx, &s)
		err = w.onCancel(ctx, s)
	})
	sel.AddFuture(deadline, func(f workflow.Future) { err = w.onDeadline(ctx, f) })
	sel.Select(ctx)
	return err
}

// onPayment applies a payment that matches the order's amount and currency; any other is recorded as
// rejected and refunded at once (RecordPayment: refunded_at, once per event), and the order keeps waiting.
// Each is a step that must succeed (must_succeed.go): the saga takes no other message until it is decided.
func (w *orderWorkflow) onPayment(ctx workflow.Context, p PaymentSignal) error {
	if w.dropsInvalid(ctx, p) {
		return nil
	}
	if _, seen := w.payResults[p.EventID]; seen || w.recording[p.EventID] {
		return nil // duplicate delivery
	}
	rec := ordersaga.PaymentRecord{EventID: p.EventID, OrderID: w.in.OrderID, AmountCents: p.AmountCents, Currency: p.Currency}
	if p.AmountCents != w.order.AmountCents || p.Currency != w.in.Currency {
		rec.Result = ordersaga.PaymentRejectedAmount
		rec.Detail = fmt.Sprintf("expected %d %s", w.order.AmountCents, w.in.Currency)
		w.logger.Warn("payment amount mismatch", "event_id", p.EventID, "amount_cents", p.AmountCents,
			"currency", p.Currency, "expected_cents", w.order.AmountCents)
		return w.recordPayment(ctx, rec)
	}
	paidAt := workflow.Now(ctx).UTC()
	err := w.steps.run(ctx, nil, acts.MarkPaid, activities.MarkPaidInput{Payment: rec, PaidAt: paidAt})
	if err != nil {
		// The database refused the transition: keep the money safe by refunding, keep waiting.
		w.logger.Error("mark paid refused; refunding", "event_id", p.EventID, "error", err)
		return w.refund(ctx, p, "order could not be marked paid")
	}
	w.payResults[p.EventID] = ordersaga.PaymentApplied
	w.order.PaidAt = &paidAt
	return w.setStatus(ctx, ordersaga.StatusPaid, "")
}

// onCancel closes the order as cancelled.
func (w *orderWorkflow) onCancel(ctx workflow.Context, s CancelSignal) error {
	reason := "cancelled"
	if s.Reason != "" {
		reason = "cancelled: " + s.Reason
	}
	return w.close(ctx, ordersaga.StatusCancelled, reason)
}

// onDeadline closes the order as expired once the deadline timer fires.
func (w *orderWorkflow) onDeadline(ctx workflow.Context, deadline workflow.Future) error {
	if err := deadline.Get(ctx, nil); err != nil {
		// The workflow itself was cancelled (an operator's request): that is a cancel, not an expiry.
		return w.close(ctx, ordersaga.StatusCancelled, "cancelled: workflow cancellation requested")
	}
	return w.close(ctx, ordersaga.StatusExpired, "payment deadline passed")
}

// refund records a payment that must go back to the payer, once per event.
func (w *orderWorkflow) refund(ctx workflow.Context, p PaymentSignal, why string) error {
	return w.recordPayment(ctx, ordersaga.PaymentRecord{
		EventID: p.EventID, OrderID: w.in.OrderID, AmountCents: p.AmountCents, Currency: p.Currency,
		Result: ordersaga.PaymentRefunded, Detail: why,
	})
}

// answerRefundOnceRecordedChange is the workflow.GetVersion change ID of answering a refund once its row is
// written: histories from before gave the answer (an update's completion, a command) before RecordPayment.
const answerRefundOnceRecordedChange = "answer-refund-once-recorded"

// recordPayment writes the row of a payment that is not applied (RecordPayment, a step that must succeed)
// and only then gives the event its result: the pay update answers once the row exists (the webhook's 200
// stops the provider's redeliveries), and a delivery meanwhile waits for it.
func (w *orderWorkflow) recordPayment(ctx workflow.Context, rec ordersaga.PaymentRecord) error {
	if rec.Result == ordersaga.PaymentRefunded &&
		workflow.GetVersion(ctx, answerRefundOnceRecordedChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		w.payResults[rec.EventID] = rec.Result // answered ahead of the record, as recorded then
	}
	w.recording[rec.EventID] = true
	err := w.steps.run(ctx, nil, acts.RecordPayment, rec)
	delete(w.recording, rec.EventID)
	if err != nil {
		w.payErrs[rec.EventID] = err
		return err
	}
	w.payResults[rec.EventID] = rec.Result
	return nil
}

// refundLate records a payment that came once the order was final for refund, never applied. An event
// already handled or being recorded, or one that fails the check, changes nothing.
func (w *orderWorkflow) refundLate(ctx workflow.Context, p PaymentSignal) error {
	if _, seen := w.payResults[p.EventID]; seen || w.recording[p.EventID] || w.dropsInvalid(ctx, p) {
		return nil
	}
	return w.refund(ctx, p, "payment arrived after the order was "+string(w.order.Status))
}

// refundLatePayments drains the inboxes of a final order, once: the payments are refunded (refundLate),
// the cancels dropped (their updates answer with the final order). From then on a pay update refunds its
// payment itself. It then waits for update handlers still running, so none is cut off by the workflow's
// completion.
func (w *orderWorkflow) refundLatePayments(ctx workflow.Context) {
	w.payments.drain(func(c workflow.ReceiveChannel) bool {
		var p PaymentSignal
		if !c.ReceiveAsync(&p) {
			return false
		}
		if err := w.refundLate(ctx, p); err != nil {
			w.logger.Error("record refund failed", "event_id", p.EventID, "error", err)
		}
		return true
	})
	w.cancels.drain(func(c workflow.ReceiveChannel) bool { return c.ReceiveAsync(nil) })
	w.drained = true
	if err := workflow.Await(uncancelled(ctx), func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		w.logger.Warn("waiting for update handlers", "error", err)
	}
}
