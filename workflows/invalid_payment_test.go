package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// invalidPayments break ordersaga.CheckPayment in one field each; the amount and currency are otherwise the
// order's, so a payment handled as it comes would be applied.
var invalidPayments = []struct {
	name   string
	field  string
	change func(p *PaymentSignal)
}{
	{"an_event_id_longer_than_its_column", "event_id", func(p *PaymentSignal) { p.EventID = strings.Repeat("e", ordersaga.MaxEventIDLen+1) }},
	{"a_space_in_the_event_id", "event_id", func(p *PaymentSignal) { p.EventID = "evt 1" }},
	{"a_negative_amount", "amount_cents", func(p *PaymentSignal) { p.AmountCents = -1 }},
	{"an_amount_past_the_largest", "amount_cents", func(p *PaymentSignal) { p.AmountCents = ordersaga.MaxAmountCents + 1 }},
	{"a_lower_case_currency", "currency", func(p *PaymentSignal) { p.Currency = strings.ToLower(testCurrency) }},
}

// TestOrderWorkflowInvalidPaymentSignalDropped: a payment signal whose fields break the rules the webhook and
// the pay update check (ordersaga.CheckPayment) is dropped with a warning and counted
// (MetricPaymentSignalsDropped, by field), never applied nor recorded; the order goes on waiting and a valid
// payment pays it.
func TestOrderWorkflowInvalidPaymentSignalDropped(t *testing.T) {
	t.Parallel()
	for _, tt := range invalidPayments {
		t.Run("dropped_with_"+tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			bad := h.payment("evt-bad")
			tt.change(&bad)
			good := h.payment("evt-good")
			h.signalPayment(time.Minute, bad)
			h.signalPayment(2*time.Minute, good)

			got := h.run()

			assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", priced(h.in.Lines), ptr(h.payBy()), ptr(testStart.Add(2*time.Minute))), got)
			h.assertCalls(
				h.reserveAll(),
				h.deductCall(h.payBy()),
				h.confirmCall(),
				h.markPaidCall(good, testStart.Add(2*time.Minute)),
			)
			assert.Equal(t, int64(1), h.metrics.count(MetricPaymentSignalsDropped, map[string]string{"field": tt.field}))
		})
	}
	t.Run("dropped_after_the_close_instead_of_refunded", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.restore = func(ctx context.Context, _ activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
			if activity.GetInfo(ctx).Attempt == 1 {
				return nil, errors.New("mysql: connection reset by peer")
			}
			return nil, nil
		}
		bad := h.payment(strings.Repeat("e", ordersaga.MaxEventIDLen+1))
		h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{}) })
		h.signalPayment(time.Minute+100*time.Millisecond, bad) // during the restore's retry

		got := h.run()

		lines := priced(h.in.Lines)
		assert.Equal(t, ordersaga.StatusCancelled, got.Status)
		h.assertCalls(
			h.reserveAll(),
			h.deductCall(h.payBy()),
			h.confirmCall(),
			h.restoreCall(lines),
			h.restoreCall(lines),
			h.releaseAll(),
			h.closeCall(ordersaga.StatusCancelled, "cancelled", ptr(h.payBy()), lines),
		)
		assert.Equal(t, int64(1), h.metrics.count(MetricPaymentSignalsDropped, map[string]string{"field": "event_id"}))
	})
}

// TestOrderWorkflowInvalidPayUpdateRejected: the pay update's validator refuses what the signal route drops,
// naming the field: the update is never accepted, so nothing of it is in the history.
func TestOrderWorkflowInvalidPayUpdateRejected(t *testing.T) {
	t.Parallel()
	for _, tt := range invalidPayments {
		t.Run("rejected_with_"+tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			bad := h.payment("evt-bad")
			tt.change(&bad)
			upd := h.update(time.Minute, UpdatePay, "pay-bad", bad)
			h.signalPayment(2*time.Minute, h.payment("evt-good"))

			got := h.run()

			assert.Equal(t, ordersaga.StatusPaid, got.Status)
			assert.False(t, upd.accepted, "accepted")
			require.Error(t, upd.rejected)
			assert.Contains(t, upd.rejected.Error(), tt.field)
			assert.NotContains(t, h.names(), actRecord)
		})
	}
}
