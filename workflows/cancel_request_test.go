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
	"github.com/ordersaga/ordersaga/activities"
)

// TestOrderWorkflowCancelRequestAnswersWaitingUpdates: a Temporal cancel request (an operator's
// `temporal workflow cancel`) ends no update's wait. Each waiting update answers what became of its message:
// the saga takes the waiting messages in its usual order (a payment, then a cancel, the cancel request last).
func TestOrderWorkflowCancelRequestAnswersWaitingUpdates(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond // mustSucceedOptions.RetryPolicy.InitialInterval
	busy := func(h *harness) {
		// The saga records a wrong-amount payment whose first attempt fails: the messages below wait.
		h.recordP = func(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
			if activity.GetInfo(ctx).Attempt == 1 {
				return ordersaga.PaymentRecord{}, errors.New("mysql: connection reset by peer")
			}
			return p, nil
		}
		h.signalPayment(time.Minute, PaymentSignal{EventID: "evt-wrong", AmountCents: 1, Currency: testCurrency})
	}
	const during = time.Minute + backoff/2

	t.Run("the_waiting_payment_applied_and_the_waiting_cancel_answered_paid", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		busy(h)
		pay := h.update(during, UpdatePay, "pay-1", h.payment("evt-right"))
		cancel := h.update(during, UpdateCancel, "cancel-1", "changed my mind")
		h.at(during, h.env.CancelWorkflow)

		got := h.run()

		assert.Equal(t, ordersaga.StatusPaid, got.Status)
		require.True(t, pay.completed, "pay update did not complete")
		require.NoError(t, pay.err)
		assert.Equal(t, ordersaga.PaymentApplied, pay.value)
		require.True(t, cancel.completed, "cancel update did not complete")
		require.NoError(t, cancel.err)
		assert.Equal(t, got, cancel.value)
	})

	t.Run("the_waiting_cancel_closes_the_order_and_answers_it_compensated", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		busy(h)
		cancel := h.update(during, UpdateCancel, "cancel-1", "changed my mind")
		h.at(during, h.env.CancelWorkflow)

		got := h.run()

		assert.Equal(t, ordersaga.StatusCancelled, got.Status)
		assert.Equal(t, "cancelled: changed my mind", got.ClosedReason)
		require.True(t, cancel.completed, "cancel update did not complete")
		require.NoError(t, cancel.err)
		assert.Equal(t, got, cancel.value)
		assert.Contains(t, cancel.ranBefore, actRestore, "answered before the order was compensated")
	})

	t.Run("the_waiting_reservation_answered_rejected", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.reserve = func(ctx context.Context, _ activities.LineInput) (ordersaga.ReserveOutcome, error) {
			return "", errors.New("redis: connection refused")
		}
		res := h.update(0, UpdateReservation, "reservation-1")
		h.at(time.Second, h.env.CancelWorkflow)

		got := h.run()

		assert.Equal(t, ordersaga.StatusRejected, got.Status)
		assert.Equal(t, "reservation failed: cancelled", got.ClosedReason)
		require.True(t, res.completed, "reservation update did not complete")
		require.NoError(t, res.err)
		r, ok := res.value.(Reservation)
		require.True(t, ok, "reservation update returned %T", res.value)
		assert.Equal(t, got, r.Order)
	})
}
