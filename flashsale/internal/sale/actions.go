package sale

import (
	"context"
	"net/http"
	"time"

	"github.com/ordersaga/ordersaga"
)

// followUp does to an accepted order what its plan says: pay it, cancel it, pay it after it expired, pay a
// wrong amount first (or only), or leave it to expire.
func (r *Runner) followUp(ctx context.Context, orderID string, p plan) {
	defer r.actionsLeft.Add(-1)
	r.mu.Lock()
	o := *r.orders[orderID]
	r.mu.Unlock()
	amount, err := ordersaga.Amount(o.Lines)
	if err != nil {
		return // prices the API could not have answered: the order is left to expire
	}
	switch o.Action {
	case ActionPay, ActionWrongThenPay, ActionWrongPay:
		if o.Action != ActionPay {
			wrong := ordersaga.PaymentEvent{EventID: wrongPayEventID(orderID), OrderID: orderID, AmountCents: amount - 1, Currency: r.cfg.Currency, Status: ordersaga.PaymentSucceeded}
			// Always redelivered: a wrong amount must be refunded exactly once.
			r.deliver(ctx, wrong, false, OutPay)
			r.deliver(ctx, wrong, false, OutPay)
			if o.Action == ActionWrongPay {
				return
			}
		}
		ev := ordersaga.PaymentEvent{EventID: payEventID(orderID), OrderID: orderID, AmountCents: amount, Currency: r.cfg.Currency, Status: ordersaga.PaymentSucceeded}
		r.deliver(ctx, ev, false, OutPay)
		if p.duplicate {
			r.deliver(ctx, ev, false, OutPay)
		}
	case ActionCancel:
		r.cancel(ctx, orderID)
		if p.duplicate {
			r.cancel(ctx, orderID)
		}
	case ActionLatePay:
		if !r.awaitExpiry(ctx, o) {
			return
		}
		ev := ordersaga.PaymentEvent{EventID: latePayEventID(orderID), OrderID: orderID, AmountCents: amount, Currency: r.cfg.Currency, Status: ordersaga.PaymentSucceeded}
		// Always redelivered: a late payment must be refunded exactly once.
		r.deliver(ctx, ev, true, OutLatePay)
		r.deliver(ctx, ev, true, OutLatePay)
	}
}

func (r *Runner) acquire(ctx context.Context) bool {
	select {
	case r.httpSem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *Runner) release() { <-r.httpSem }

// deliver posts a payment event as a provider does: retried on a transport error or a 5xx.
func (r *Runner) deliver(ctx context.Context, ev ordersaga.PaymentEvent, late bool, out Outcome) {
	r.mu.Lock()
	ps, ok := r.payments[ev.EventID]
	if !ok {
		ps = &PaymentSnapshot{EventID: ev.EventID, OrderID: ev.OrderID, Late: late, AmountCents: ev.AmountCents,
			Currency: ev.Currency, WrongAmount: ev.EventID == wrongPayEventID(ev.OrderID)}
		r.payments[ev.EventID] = ps
	}
	r.mu.Unlock()
	for attempt := 0; attempt < 5; attempt++ {
		if !r.acquire(ctx) {
			return
		}
		a, w, err := r.c.Pay(ctx, ev)
		r.release()
		if err == nil && a.Status == http.StatusOK {
			r.stats.Record(out, a.Latency)
			r.mu.Lock()
			ps.Results = append(ps.Results, string(w.Result))
			r.mu.Unlock()
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.failed("webhook ", a, err)
		if err == nil && a.Status < 500 {
			return // 4xx: the provider would not retry
		}
		r.mu.Lock()
		ps.Failed++
		r.mu.Unlock()
		if !sleepCtx(ctx, time.Duration(attempt+1)*300*time.Millisecond) {
			return
		}
	}
}

func (r *Runner) cancel(ctx context.Context, orderID string) {
	if !r.acquire(ctx) {
		return
	}
	a, o, err := r.c.CancelOrder(ctx, orderID)
	r.release()
	if err == nil && a.Status == http.StatusOK {
		r.stats.Record(OutCancel, a.Latency)
		r.mu.Lock()
		if snap, ok := r.orders[orderID]; ok {
			snap.CancelStatus = o.Status
			snap.Status = o.Status
		}
		r.mu.Unlock()
		return
	}
	if ctx.Err() != nil {
		return
	}
	r.failed("cancel ", a, err)
}

// failed counts an exchange that got no usable answer as an error of op's kind, with the body or the error.
func (r *Runner) failed(op string, a Answer, err error) {
	r.stats.Record(OutError, a.Latency)
	r.stats.Error(op+errorKind(a, err), failure(a, err))
}

// failure is what an exchange that failed said: the error, or else the answer's body.
func failure(a Answer, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(a.Body)
}

// awaitExpiry waits until the order's deadline has passed and the API shows it closed.
func (r *Runner) awaitExpiry(ctx context.Context, o OrderSnapshot) bool {
	if o.PayBy != nil && !sleepCtx(ctx, time.Until(*o.PayBy)+200*time.Millisecond) {
		return false
	}
	for ctx.Err() == nil {
		if r.acquire(ctx) {
			cur, err := r.c.GetOrder(ctx, o.OrderID)
			r.release()
			if err == nil {
				r.setStatus(o.OrderID, cur.Status)
				if cur.Status.Final() {
					return cur.Status == ordersaga.StatusExpired || cur.Status == ordersaga.StatusCancelled
				}
			}
		}
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return false
		}
	}
	return false
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
