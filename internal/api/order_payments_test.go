package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
)

func (r response) payments(t testing.TB) ordersaga.OrderPayments {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("payments: %s", r)
	}
	var p ordersaga.OrderPayments
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("payments body %s: %v", r.body, err)
	}
	return p
}

// TestOrderPayments_ShowsEachPaymentAndItsRefund: GET /v1/orders/{id}/payments shows a wrong-amount payment's
// refund pending, then sent with the provider's reference once the sender marks it, the right payment kept
// (refund null), and a refusal with its reason; unknown orders are 404, and with a caller identity another
// user's order is 404 too.
func TestOrderPayments_ShowsEachPaymentAndItsRefund(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()
	e.Stock(t, "PAYVIEW-1", 10, 999)
	o := e.place("k-payview", orderBody("u-payview", ordersaga.Line{SKU: "PAYVIEW-1", Qty: 2})).order(t)

	if r := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-pv-wrong", OrderID: o.OrderID, AmountCents: o.AmountCents - 1,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret)); r.Result != ordersaga.PaymentRejectedAmount {
		t.Fatalf("wrong amount answered %+v", r)
	}
	p := e.do(http.MethodGet, "/v1/orders/"+o.OrderID+"/payments", nil, nil).payments(t)
	if len(p.Payments) != 1 || p.OrderID != o.OrderID {
		t.Fatalf("payments %+v, want the one wrong-amount payment", p)
	}
	got := p.Payments[0]
	if got.EventID != "evt-pv-wrong" || got.Result != ordersaga.PaymentRejectedAmount || got.AmountCents != o.AmountCents-1 ||
		got.Refund == nil || got.Refund.Status != ordersaga.RefundPending || got.Refund.SentAt != nil {
		t.Errorf("before the sender: %+v refund %+v, want rejected_amount with a pending refund", got, got.Refund)
	}

	if _, err := e.Store.MarkRefundSent(ctx, "evt-pv-wrong", "re_provider_1"); err != nil {
		t.Fatal(err)
	}
	if r := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-pv-right", OrderID: o.OrderID, AmountCents: o.AmountCents,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret)); r.Result != ordersaga.PaymentApplied {
		t.Fatalf("right amount answered %+v", r)
	}
	if r := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-pv-late", OrderID: o.OrderID, AmountCents: o.AmountCents,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret)); r.Result != ordersaga.PaymentRefunded {
		t.Fatalf("a second payment answered %+v, want refunded", r)
	}
	if _, err := e.Store.MarkRefundRefused(ctx, "evt-pv-late", "refused: card closed"); err != nil {
		t.Fatal(err)
	}
	p = e.do(http.MethodGet, "/v1/orders/"+o.OrderID+"/payments", nil, nil).payments(t)
	if len(p.Payments) != 3 {
		t.Fatalf("payments %+v, want three in the order recorded", p)
	}
	sent, kept, refused := p.Payments[0], p.Payments[1], p.Payments[2]
	if sent.Refund == nil || sent.Refund.Status != ordersaga.RefundSent || sent.Refund.ProviderRef != "re_provider_1" || sent.Refund.SentAt == nil {
		t.Errorf("after the mark: %+v refund %+v, want sent with the provider's reference", sent, sent.Refund)
	}
	if kept.EventID != "evt-pv-right" || kept.Result != ordersaga.PaymentApplied || kept.Refund != nil {
		t.Errorf("the applied payment %+v refund %+v, want kept (refund null)", kept, kept.Refund)
	}
	if refused.Refund == nil || refused.Refund.Status != ordersaga.RefundRefused || refused.Refund.Reason != "refused: card closed" ||
		refused.Refund.RefusedAt == nil {
		t.Errorf("the refused refund %+v refund %+v", refused, refused.Refund)
	}

	e.do(http.MethodGet, "/v1/orders/no-such-order/payments", nil, nil).wantProblem(t, http.StatusNotFound, "order-not-found")

	// A payment for an order nobody placed is refunded and shown.
	if r := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-pv-ghost", OrderID: "ghost-order", AmountCents: 5,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret)); r.Result != ordersaga.PaymentRefunded {
		t.Fatalf("a payment for an unknown order answered %+v", r)
	}
	if g := e.do(http.MethodGet, "/v1/orders/ghost-order/payments", nil, nil).payments(t); len(g.Payments) != 1 ||
		g.Payments[0].Refund == nil || g.Payments[0].Refund.Status != ordersaga.RefundPending {
		t.Errorf("the unknown order's payments %+v", g)
	}

	// With a caller identity, only the order's own user sees its payments.
	id := serveAPI(t, e.Env, func(d *api.Deps) { d.Identity = api.HeaderIdentity{Header: "X-User-Id"} })
	if p := id.do(http.MethodGet, "/v1/orders/"+o.OrderID+"/payments", nil, map[string]string{"X-User-Id": "u-payview"}).payments(t); len(p.Payments) != 3 {
		t.Errorf("the owner sees %+v", p)
	}
	id.do(http.MethodGet, "/v1/orders/"+o.OrderID+"/payments", nil, map[string]string{"X-User-Id": "u-other"}).
		wantProblem(t, http.StatusNotFound, "order-not-found")
	id.do(http.MethodGet, "/v1/orders/ghost-order/payments", nil, map[string]string{"X-User-Id": "u-other"}).
		wantProblem(t, http.StatusNotFound, "order-not-found")
}
