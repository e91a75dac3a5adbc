package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
)

// The pay and cancel updates feed the same queues as the signals, so one loop decides every transition;
// the handlers only wait for the outcome.
func (w *orderWorkflow) setupUpdates(ctx workflow.Context) error {
	w.payQueue = workflow.NewBufferedChannel(ctx, 1024)
	w.cancelQueue = workflow.NewBufferedChannel(ctx, 1024)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdatePay, w.handlePay, workflow.UpdateHandlerOptions{
		Validator: func(_ workflow.Context, p PaymentSignal) error {
			if p.EventID == "" {
				return errors.New("pay: event id is empty")
			}
			return nil
		},
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, UpdateCancel, w.handleCancel)
}

func (w *orderWorkflow) handlePay(ctx workflow.Context, p PaymentSignal) (ordersaga.PaymentResult, error) {
	if _, seen := w.payResults[p.EventID]; seen {
		return ordersaga.PaymentDuplicate, nil
	}
	if w.order.Status.Final() && w.drained {
		// The loop is done: refund here.
		if err := w.refund(ctx, p, "payment arrived after the order was "+string(w.order.Status)); err != nil {
			return "", err
		}
		return ordersaga.PaymentRefunded, nil
	}
	w.payQueue.Send(ctx, p)
	if err := workflow.Await(ctx, func() bool { _, ok := w.payResults[p.EventID]; return ok }); err != nil {
		return "", err
	}
	return w.payResults[p.EventID], nil
}

func (w *orderWorkflow) handleCancel(ctx workflow.Context, reason string) (ordersaga.Order, error) {
	if !w.order.Status.Final() {
		w.cancelQueue.Send(ctx, CancelSignal{Reason: reason})
	}
	err := workflow.Await(ctx, func() bool {
		return w.order.Status.Final() && (w.compensated || w.order.Status == ordersaga.StatusPaid)
	})
	return w.view(), err
}
