package e2e

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/workflows"
)

// notAnswered fails the test when the update answers within a second: its outcome is not decided yet.
func notAnswered(t *testing.T, h client.WorkflowUpdateHandle, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var got any
	if err := h.Get(ctx, &got); !orderclient.Undecided(err) {
		t.Fatalf("update %s answered %v (%v) %s", h.UpdateID(), got, err, why)
	}
}

// TestPay_AnsweredOnceTheRefundIsRecorded: a payment that reaches a cancelled order while it compensates is
// refunded when the closed order drains it, and its pay update answers only once the refund's row is written
// (the webhook answers 200 then, and the provider stops redelivering), on the real server.
func TestPay_AnsweredOnceTheRefundIsRecorded(t *testing.T) {
	r := startRecorder(t, t.TempDir())
	const name = "answer-refund"
	r.stock(t, "ANS-REF", 5, 5)
	res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "ANS-REF")
	id := workflows.OrderWorkflowID("rec-" + name)
	restore := r.gate.hold(t, id, "RestoreOrder")
	record := r.gate.hold(t, id, "RecordPayment")
	r.signal(t, name, workflows.SignalCancel, workflows.CancelSignal{})
	restore.reached(t)
	p := workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"}
	h := r.payAccepted(t, name, p)
	restore.open()
	record.reached(t)

	notAnswered(t, h, "while its refund's RecordPayment is held")
	rows := func() int64 {
		var n int64
		if err := r.store.DB().Raw("SELECT COUNT(*) FROM payments WHERE event_id = ?", p.EventID).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d payments rows of %s before the record ran", n, p.EventID)
	}
	record.open()
	answer(t, h, ordersaga.PaymentRefunded)
	if n := rows(); n != 1 {
		t.Fatalf("%d payments rows of %s once answered, want 1", n, p.EventID)
	}
	r.finish(t, name, ordersaga.StatusCancelled)
}

// TestCancelRequest_AnswersWaitingUpdates: a Temporal cancel request (temporal workflow cancel) that comes
// while a pay update and a cancel update wait for the busy saga fails neither: the waiting payment is applied
// (a payment goes before a cancel) and answered, and the cancel update answers the order PAID.
func TestCancelRequest_AnswersWaitingUpdates(t *testing.T) {
	r := startRecorder(t, t.TempDir())
	const name = "answer-cancel-request"
	r.stock(t, "ANS-CANR", 5, 5)
	res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "ANS-CANR")
	id := workflows.OrderWorkflowID("rec-" + name)
	busy := r.gate.hold(t, id, "RecordPayment")
	r.signal(t, name, workflows.SignalPayment, workflows.PaymentSignal{EventID: "evt-wrong-" + name, AmountCents: 1, Currency: "CNY"})
	busy.reached(t)
	pay := r.payAccepted(t, name, workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"})
	cancel, err := r.c.UpdateWorkflow(ctxT(t), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateCancel, Args: []any{"changed my mind"},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.CancelWorkflow(ctxT(t), id, ""); err != nil {
		t.Fatal(err)
	}
	busy.open()

	answer(t, pay, ordersaga.PaymentApplied)
	var o ordersaga.Order
	if err := cancel.Get(ctxT(t), &o); err != nil || o.Status != ordersaga.StatusPaid {
		t.Fatalf("cancel update: %s %v, want the order PAID", o.Status, err)
	}
	r.finish(t, name, ordersaga.StatusPaid)
}
