package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// TestOrderWorkflowPaymentAnsweredOnceRecorded: the pay update answers only once the payment's row is written
// (the webhook then says 200 and the provider stops redelivering), whatever the answer: here the database
// fails the record three times (retried after 0.2, 0.4 and 0.8 s), and the answer comes with the fourth attempt.
func TestOrderWorkflowPaymentAnsweredOnceRecorded(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond // mustSucceedOptions.RetryPolicy.InitialInterval
	tests := []struct {
		name string
		// act sets up the order and sends the payment p by the pay update.
		act  func(h *harness, p *PaymentSignal) *updateOutcome
		want ordersaga.PaymentResult
	}{
		{
			name: "rejected_amount_once_the_wrong_amount_is_recorded",
			act: func(h *harness, p *PaymentSignal) *updateOutcome {
				p.AmountCents--
				return h.update(time.Minute, UpdatePay, "pay-1", *p)
			},
			want: ordersaga.PaymentRejectedAmount,
		},
		{
			name: "refunded_once_the_refund_of_a_payment_mark_paid_refused_is_recorded",
			act: func(h *harness, p *PaymentSignal) *updateOutcome {
				h.markPaid = func(context.Context, activities.MarkPaidInput) error {
					return temporal.NewNonRetryableApplicationError("order not payable", "OrderNotPayable", nil)
				}
				return h.update(time.Minute, UpdatePay, "pay-1", *p)
			},
			want: ordersaga.PaymentRefunded,
		},
		{
			// The update is accepted while the cancelled order compensates (the restore fails once), so its
			// payment waits in the inbox and is refunded when the closed order drains it.
			name: "refunded_once_the_refund_of_a_payment_drained_after_the_close_is_recorded",
			act: func(h *harness, p *PaymentSignal) *updateOutcome {
				h.restore = func(ctx context.Context, _ activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
					if activity.GetInfo(ctx).Attempt == 1 {
						return nil, errors.New("mysql: connection reset by peer")
					}
					return nil, nil
				}
				h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{}) })
				return h.update(time.Minute+backoff/2, UpdatePay, "pay-1", *p)
			},
			want: ordersaga.PaymentRefunded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			p := h.payment("evt-answer")
			upd := tt.act(h, &p)
			prior := h.recordP
			h.recordP = func(ctx context.Context, rec ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
				if rec.EventID == p.EventID && activity.GetInfo(ctx).Attempt <= 3 {
					return ordersaga.PaymentRecord{}, errors.New("mysql: connection reset by peer")
				}
				if prior != nil {
					return prior(ctx, rec)
				}
				return rec, nil
			}

			h.run()

			require.True(t, upd.completed, "pay update did not complete")
			require.NoError(t, upd.err)
			assert.Equal(t, tt.want, upd.value)
			var written time.Time // the attempt that wrote the row: the last of the event's
			calls, times := h.recorded()
			for i, c := range calls {
				if c.Activity == actRecord && c.Input.(ordersaga.PaymentRecord).EventID == p.EventID {
					written = times[i]
				}
			}
			require.False(t, written.IsZero(), "the payment was never recorded")
			assert.Equal(t, written, upd.at, "answered %s before the row was written", written.Sub(upd.at))
		})
	}
}
