package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestOrderLifecycle covers GET /v1/orders/{id} and POST /v1/orders/{id}/cancel: running and closed orders,
// paid, cancelled and expired ones, unknown ones.
func TestOrderLifecycle(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	e.Stock(t, "LIFE-1", 100, 1000)
	line := ordersaga.Line{SKU: "LIFE-1", Qty: 2}
	placeOK := func(t *testing.T, e *apiEnv, key, user string) ordersaga.Order {
		t.Helper()
		r := e.place(key, orderBody(user, line))
		if r.status != http.StatusCreated {
			t.Fatalf("place: %s", r)
		}
		return r.order(t)
	}

	t.Run("get_running_order_from_the_workflow", func(t *testing.T) {
		t.Parallel()
		o := placeOK(t, e, "k-get", "u-get")
		r := e.do(http.MethodGet, "/v1/orders/"+o.OrderID, nil, nil)
		if r.status != http.StatusOK {
			t.Fatalf("get: %s", r)
		}
		if got := r.order(t); got.Status != ordersaga.StatusAwaitingPayment || got.AmountCents != 2000 || got.OrderID != o.OrderID {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("unknown_order_is_404", func(t *testing.T) {
		t.Parallel()
		for _, req := range []struct{ method, path string }{
			{http.MethodGet, "/v1/orders/o-000000000000000000000000"},
			{http.MethodGet, "/v1/orders/bad%20id"},
			{http.MethodPost, "/v1/orders/o-000000000000000000000000/cancel"},
		} {
			e.do(req.method, req.path, nil, nil).wantProblem(t, http.StatusNotFound, "order-not-found")
		}
	})

	t.Run("cancel_restores_stock_then_is_idempotent", func(t *testing.T) {
		t.Parallel()
		o := placeOK(t, e, "k-cancel", "u-cancel")
		r := e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil)
		if r.status != http.StatusOK || r.order(t).Status != ordersaga.StatusCancelled {
			t.Fatalf("cancel: %s", r)
		}
		first := r.order(t)
		// The workflow is closed now: the database answers, unchanged.
		waitClosed(t, e, o.OrderID)
		for _, req := range []struct{ method, path string }{
			{http.MethodPost, "/v1/orders/" + o.OrderID + "/cancel"},
			{http.MethodGet, "/v1/orders/" + o.OrderID},
		} {
			r := e.do(req.method, req.path, nil, nil)
			if r.status != http.StatusOK {
				t.Fatalf("%s %s: %s", req.method, req.path, r)
			}
			if got := r.order(t); got.Status != ordersaga.StatusCancelled || got.ClosedReason != first.ClosedReason {
				t.Errorf("%s %s: %+v, want the cancelled order unchanged", req.method, req.path, got)
			}
		}
		if n := e.countRows("stock_ledger", "order_id = ? AND op = ? AND qty = 2", o.OrderID, "RESTORE"); n != 1 {
			t.Errorf("%d restores of the cancelled order, want 1", n)
		}
	})

	t.Run("cancel_with_a_body_is_400", func(t *testing.T) {
		t.Parallel()
		r := e.do(http.MethodPost, "/v1/orders/o-000000000000000000000000/cancel", []byte(`{"reason":"x"}`), nil)
		r.wantProblem(t, http.StatusBadRequest, "invalid-body")
	})

	t.Run("cancel_after_pay_is_409", func(t *testing.T) {
		t.Parallel()
		o := placeOK(t, e, "k-paid", "u-paid")
		a := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-life-paid", OrderID: o.OrderID, AmountCents: o.AmountCents,
			Currency: testCurrency, Status: "succeeded"}, time.Now(), testSecret))
		if a.Result != ordersaga.PaymentApplied {
			t.Fatalf("pay: %+v", a)
		}
		r := e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil)
		p := r.wantProblem(t, http.StatusConflict, "already-paid")
		if p.OrderID != o.OrderID {
			t.Errorf("problem %+v does not name the order", p)
		}
		waitClosed(t, e, o.OrderID)
		e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil).wantProblem(t, http.StatusConflict, "already-paid")
		r = e.do(http.MethodGet, "/v1/orders/"+o.OrderID, nil, nil)
		if got := r.order(t); got.Status != ordersaga.StatusPaid || got.PaidAt == nil {
			t.Errorf("paid order reads %+v", got)
		}
	})

	t.Run("unpaid_order_expires_and_cancel_leaves_it_unchanged", func(t *testing.T) {
		t.Parallel()
		short := serveAPI(t, e.Env, func(d *api.Deps) { d.PaymentTimeout = time.Second })
		o := placeOK(t, short, "k-expire", "u-expire")
		waitClosed(t, e, o.OrderID)
		r := e.do(http.MethodGet, "/v1/orders/"+o.OrderID, nil, nil)
		if got := r.order(t); got.Status != ordersaga.StatusExpired {
			t.Fatalf("got %+v, want EXPIRED", got)
		}
		r = e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil)
		if r.status != http.StatusOK || r.order(t).Status != ordersaga.StatusExpired {
			t.Errorf("cancel of an expired order: %s, want 200 EXPIRED", r)
		}
	})
}

// waitClosed waits until the order's workflow has completed.
func waitClosed(t *testing.T, e *apiEnv, orderID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var o ordersaga.Order
	if err := e.Client.GetWorkflow(ctx, workflows.OrderWorkflowID(orderID), "").Get(ctx, &o); err != nil {
		t.Fatalf("order %s: %v", orderID, err)
	}
}
