package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/ordersaga/ordersaga"
)

// TestOrderWorkflowPaymentBySignalAndByUpdate delivers one payment event by both routes, the signal (payment
// services) and the pay update (the webhook): they meet in one inbox and one onPayment, so the second
// delivery is a duplicate of the first, whichever route came first, and the event is applied once.
func TestOrderWorkflowPaymentBySignalAndByUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		send func(h *harness, p PaymentSignal) *updateOutcome
	}{
		{
			// The update arrives before the signal's payment is decided: it waits for it and answers with
			// its result.
			name: "signal_first_the_update_answers_what_the_signal_did",
			send: func(h *harness, p PaymentSignal) *updateOutcome {
				h.signalPayment(time.Minute, p)
				return h.update(time.Minute, UpdatePay, "pay-1", p)
			},
		},
		{
			name: "update_first_the_signal_is_dropped_as_a_duplicate",
			send: func(h *harness, p PaymentSignal) *updateOutcome {
				u := h.update(time.Minute, UpdatePay, "pay-1", p)
				h.signalPayment(time.Minute, p)
				return u
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			pay := h.payment("evt-both")
			upd := tt.send(h, pay)

			got := h.run()

			paidAt := testStart.Add(time.Minute)
			assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", priced(h.in.Lines), ptr(h.payBy()), &paidAt), got)
			require.True(t, upd.completed, "pay update did not complete")
			require.NoError(t, upd.err)
			assert.Equal(t, ordersaga.PaymentApplied, upd.value)
			// One MarkPaid, and the duplicate is neither applied again nor recorded for refund.
			h.assertCalls(
				h.reserveAll(),
				h.deductCall(h.payBy()),
				h.confirmCall(),
				h.markPaidCall(pay, paidAt),
			)
		})
	}
}

// TestOrderWorkflowCancelSignalRacesPayUpdate sends a cancel by signal and a payment by update at the same
// instant. Both go through the same inboxes and the same next: while the order waits, the first to come wins
// (the signal, delivered before the update's handler runs); when both already wait (the saga was busy with
// another payment), the payment goes first. Either way the loser's outcome follows from the winner's: a
// payment after the close is refunded, a cancel after the payment changes nothing.
func TestOrderWorkflowCancelSignalRacesPayUpdate(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond // mustSucceedOptions.RetryPolicy.InitialInterval
	lines := priced([]ordersaga.Line{{SKU: "SKU-A", Qty: 2}, {SKU: "SKU-B", Qty: 1}})

	t.Run("while_the_order_waits_the_cancel_comes_first_and_the_payment_is_refunded", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		pay := h.payment("evt-race")
		h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{Reason: "race"}) })
		upd := h.update(time.Minute, UpdatePay, "pay-race", pay)

		got := h.run()

		assert.Equal(t, h.wantOrder(ordersaga.StatusCancelled, "cancelled: race", lines, ptr(h.payBy()), nil), got)
		require.True(t, upd.completed, "pay update did not complete")
		require.NoError(t, upd.err)
		assert.Equal(t, ordersaga.PaymentRefunded, upd.value)
		h.assertCalls(
			h.reserveAll(),
			h.deductCall(h.payBy()),
			h.confirmCall(),
			h.restoreCall(lines),
			h.releaseAll(),
			h.closeCall(ordersaga.StatusCancelled, "cancelled: race", ptr(h.payBy()), lines),
			h.recordCall(pay, ordersaga.PaymentRefunded, "payment arrived after the order was CANCELLED"),
		)
	})

	t.Run("while_the_saga_is_busy_the_payment_goes_first_and_the_cancel_is_dropped", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		wrong := PaymentSignal{EventID: "evt-wrong", AmountCents: 1, Currency: testCurrency}
		pay := h.payment("evt-race")
		h.recordP = func(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
			if activity.GetInfo(ctx).Attempt == 1 {
				return ordersaga.PaymentRecord{}, errors.New("mysql: connection reset by peer")
			}
			return p, nil
		}
		h.signalPayment(time.Minute, wrong)
		// During the retry backoff of the wrong payment's record: the cancel first, then the payment.
		h.at(time.Minute+backoff/2, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{Reason: "race"}) })
		upd := h.update(time.Minute+backoff/2, UpdatePay, "pay-race", pay)

		got := h.run()

		paidAt := testStart.Add(time.Minute + backoff)
		assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", lines, ptr(h.payBy()), &paidAt), got)
		require.True(t, upd.completed, "pay update did not complete")
		require.NoError(t, upd.err)
		assert.Equal(t, ordersaga.PaymentApplied, upd.value)
		h.assertCalls(
			h.reserveAll(),
			h.deductCall(h.payBy()),
			h.confirmCall(),
			h.recordCall(wrong, ordersaga.PaymentRejectedAmount, "expected 2498 CNY"),
			h.recordCall(wrong, ordersaga.PaymentRejectedAmount, "expected 2498 CNY"),
			h.markPaidCall(pay, paidAt),
		)
	})
}
