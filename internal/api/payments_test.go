package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// TestPaymentWebhook covers every row of docs/http-api.md's payments table.
func TestPaymentWebhook(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	e.Stock(t, "PAY-1", 1000, 1250)
	open := func(t *testing.T, e *apiEnv, key string) ordersaga.Order {
		t.Helper()
		r := e.place(key, orderBody("u-pay", ordersaga.Line{SKU: "PAY-1", Qty: 2}))
		if r.status != http.StatusCreated {
			t.Fatalf("place: %s", r)
		}
		return r.order(t)
	}
	event := func(id string, o ordersaga.Order) api.PaymentEvent {
		return api.PaymentEvent{EventID: id, OrderID: o.OrderID, AmountCents: o.AmountCents, Currency: testCurrency, Status: "succeeded"}
	}
	status := func(t *testing.T, orderID string) ordersaga.Status {
		t.Helper()
		o, err := orderclient.Status(context.Background(), e.Client, orderID)
		if err != nil {
			t.Fatal(err)
		}
		return o.Status
	}

	t.Run("bad_signatures_are_401_and_record_nothing", func(t *testing.T) {
		t.Parallel()
		// The server's clock stands still, so the tolerance's edges do not move while the test runs.
		now := time.Unix(time.Now().Unix(), 0) // whole seconds, like the header's t
		fixed := serveAPI(t, e.Env, func(d *api.Deps) { d.Now = func() time.Time { return now } })
		o := open(t, e, "k-sig")
		ev := event("evt-sig", o)
		body, _ := json.Marshal(ev)
		ts := strconv.FormatInt(now.Unix(), 10)
		good := webhook.Compute(testSecret, now.Unix(), body)
		tests := []struct{ name, header string }{
			{"missing", ""},
			{"no_timestamp", "v1=" + good},
			{"no_v1", "t=" + ts},
			{"not_key_value", "t=" + ts + ",garbage"},
			{"timestamp_not_a_number", "t=soon,v1=" + good},
			{"v1_not_hex", "t=" + ts + ",v1=zz" + good[2:]},
			{"v1_too_short", "t=" + ts + ",v1=" + good[:32]},
			{"two_timestamps", "t=" + ts + ",t=" + ts + ",v1=" + good},
			{"wrong_secret", webhook.Sign(now, body, "not-the-secret")},
			{"retired_secret", webhook.Sign(now, body, "whsec-retired-long-ago")},
			{"signed_other_body", webhook.Sign(now, []byte(`{"event_id":"evt-sig"}`), testSecret)},
			{"other_timestamp_in_header", "t=" + strconv.FormatInt(now.Unix()+1, 10) + ",v1=" + good},
			{"stale_by_301s", webhook.Sign(now.Add(-301*time.Second), body, testSecret)},
			{"future_by_301s", webhook.Sign(now.Add(301*time.Second), body, testSecret)},
		}
		for _, tc := range tests {
			h := map[string]string{}
			if tc.header != "" {
				h[webhook.Header] = tc.header
			}
			r := fixed.do(http.MethodPost, "/v1/payments/webhook", body, h)
			if r.status != http.StatusUnauthorized {
				t.Errorf("%s: got %s, want 401", tc.name, r)
				continue
			}
			if p := r.problem(t); p.Type != api.ProblemTypeBase+"invalid-signature" {
				t.Errorf("%s: problem %+v", tc.name, p)
			}
		}
		if n := e.countRows("payments", "order_id = ?", o.OrderID); n != 0 {
			t.Errorf("%d payments recorded after bad signatures", n)
		}
		if s := status(t, o.OrderID); s != ordersaga.StatusAwaitingPayment {
			t.Errorf("order %s after bad signatures, want AWAITING_PAYMENT", s)
		}
		// At the edge of the tolerance is fine.
		if a := fixed.payAnswer(fixed.pay(ev, now.Add(-300*time.Second), testSecret)); a.Result != ordersaga.PaymentApplied {
			t.Errorf("signed 300 s ago: %+v", a)
		}
	})

	t.Run("applied_then_duplicate", func(t *testing.T) {
		t.Parallel()
		o := open(t, e, "k-applied")
		ev := event("evt-applied", o)
		a := e.payAnswer(e.pay(ev, time.Now(), testSecret))
		if a.Result != ordersaga.PaymentApplied || a.OrderID != o.OrderID {
			t.Fatalf("first delivery: %+v", a)
		}
		for range 2 {
			if a := e.payAnswer(e.pay(ev, time.Now(), testSecret)); a.Result != ordersaga.PaymentDuplicate {
				t.Errorf("again: %+v, want duplicate", a)
			}
		}
		if n := e.countRows("payments", "event_id = ? AND result = ?", ev.EventID, "applied"); n != 1 {
			t.Errorf("%d applied rows, want 1", n)
		}
		if n := e.countRows("orders", "order_id = ? AND status = ? AND payment_event_id = ?", o.OrderID, "PAID", ev.EventID); n != 1 {
			t.Errorf("order not PAID by %s in the database", ev.EventID)
		}
	})

	t.Run("rotated_secrets_both_verify", func(t *testing.T) {
		t.Parallel()
		o1, o2 := open(t, e, "k-rot-old"), open(t, e, "k-rot-both")
		if a := e.payAnswer(e.pay(event("evt-rot-old", o1), time.Now(), testOldKey)); a.Result != ordersaga.PaymentApplied {
			t.Errorf("signed with the previous secret: %+v", a)
		}
		// A sender mid-rotation signs with an unknown new key and the current one.
		if a := e.payAnswer(e.pay(event("evt-rot-both", o2), time.Now(), "whsec-next", testSecret)); a.Result != ordersaga.PaymentApplied {
			t.Errorf("signed with two keys: %+v", a)
		}
	})

	t.Run("amount_or_currency_mismatch_is_rejected_and_the_order_stays_unpaid", func(t *testing.T) {
		t.Parallel()
		o := open(t, e, "k-mismatch")
		wrong := event("evt-wrong-amount", o)
		wrong.AmountCents--
		if a := e.payAnswer(e.pay(wrong, time.Now(), testSecret)); a.Result != ordersaga.PaymentRejectedAmount {
			t.Errorf("wrong amount: %+v", a)
		}
		usd := event("evt-wrong-currency", o)
		usd.Currency = "USD"
		if a := e.payAnswer(e.pay(usd, time.Now(), testSecret)); a.Result != ordersaga.PaymentRejectedAmount {
			t.Errorf("wrong currency: %+v", a)
		}
		if s := status(t, o.OrderID); s != ordersaga.StatusAwaitingPayment {
			t.Errorf("order %s, want AWAITING_PAYMENT", s)
		}
		if n := e.countRows("payments", "order_id = ? AND result = ?", o.OrderID, "rejected_amount"); n != 2 {
			t.Errorf("%d rejected payments recorded, want 2", n)
		}
		if a := e.payAnswer(e.pay(event("evt-right", o), time.Now(), testSecret)); a.Result != ordersaga.PaymentApplied {
			t.Errorf("right amount after: %+v", a)
		}
	})

	t.Run("late_payment_is_refunded_once_when_delivered_three_times", func(t *testing.T) {
		t.Parallel()
		short := serveAPI(t, e.Env, func(d *api.Deps) { d.PaymentTimeout = time.Second })
		o := open(t, short, "k-late")
		waitClosed(t, e, o.OrderID)
		ev := event("evt-late", o)
		var results []ordersaga.PaymentResult
		for range 3 {
			results = append(results, e.payAnswer(e.pay(ev, time.Now(), testSecret)).Result)
		}
		want := []ordersaga.PaymentResult{ordersaga.PaymentRefunded, ordersaga.PaymentDuplicate, ordersaga.PaymentDuplicate}
		if len(results) != 3 || results[0] != want[0] || results[1] != want[1] || results[2] != want[2] {
			t.Errorf("results %v, want %v", results, want)
		}
		if n := e.countRows("payments", "event_id = ? AND result = ? AND refunded_at IS NOT NULL", ev.EventID, "refunded"); n != 1 {
			t.Errorf("%d refund rows, want 1", n)
		}
		if n := e.countRows("payments", "order_id = ?", o.OrderID); n != 1 {
			t.Errorf("%d payment rows for the expired order, want 1", n)
		}
	})

	t.Run("late_payment_delivered_three_times_at_once_is_refunded_once", func(t *testing.T) {
		t.Parallel()
		o := open(t, e, "k-late-concurrent")
		if r := e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil); r.status != http.StatusOK {
			t.Fatalf("cancel: %s", r)
		}
		waitClosed(t, e, o.OrderID)
		ev := event("evt-late-concurrent", o)
		var wg sync.WaitGroup
		answers := make([]api.PaymentAnswer, 3)
		for i := range answers {
			wg.Go(func() { answers[i] = e.payAnswer(e.pay(ev, time.Now(), testSecret)) })
		}
		wg.Wait()
		refunded := 0
		for _, a := range answers {
			switch a.Result {
			case ordersaga.PaymentRefunded:
				refunded++
			case ordersaga.PaymentDuplicate:
			default:
				t.Errorf("answer %+v", a)
			}
		}
		if refunded == 0 {
			t.Errorf("answers %+v: none refunded", answers)
		}
		if n := e.countRows("payments", "event_id = ?", ev.EventID); n != 1 {
			t.Errorf("%d rows for the event, want 1", n)
		}
	})

	t.Run("order_paid_by_another_event_refunds_the_second", func(t *testing.T) {
		t.Parallel()
		o := open(t, e, "k-twice")
		if a := e.payAnswer(e.pay(event("evt-twice-1", o), time.Now(), testSecret)); a.Result != ordersaga.PaymentApplied {
			t.Fatalf("first: %+v", a)
		}
		if a := e.payAnswer(e.pay(event("evt-twice-2", o), time.Now(), testSecret)); a.Result != ordersaga.PaymentRefunded {
			t.Errorf("second event: %+v, want refunded", a)
		}
		if n := e.countRows("payments", "event_id = ? AND result = ?", "evt-twice-2", "refunded"); n != 1 {
			t.Errorf("%d refunds of the second event, want 1", n)
		}
	})

	t.Run("order_unknown_to_temporal_is_refunded", func(t *testing.T) {
		t.Parallel()
		ev := api.PaymentEvent{EventID: "evt-ghost", OrderID: "o-ghost", AmountCents: 100, Currency: testCurrency, Status: "succeeded"}
		if a := e.payAnswer(e.pay(ev, time.Now(), testSecret)); a.Result != ordersaga.PaymentRefunded || a.OrderID != "o-ghost" {
			t.Errorf("got %+v, want refunded", a)
		}
	})

	t.Run("valid_signature_bad_body_is_400", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, body, kind string }{
			{"not_json", `{"event_id":`, "invalid-body"},
			{"unknown_field", `{"event_id":"e","order_id":"o","amount_cents":1,"currency":"CNY","status":"succeeded","x":1}`, "invalid-body"},
			{"no_event_id", `{"order_id":"o","amount_cents":1,"currency":"CNY","status":"succeeded"}`, "invalid-field"},
			{"negative_amount", `{"event_id":"e","order_id":"o","amount_cents":-1,"currency":"CNY","status":"succeeded"}`, "invalid-field"},
			{"lower_case_currency", `{"event_id":"e","order_id":"o","amount_cents":1,"currency":"cny","status":"succeeded"}`, "invalid-field"},
			{"failed_payment", `{"event_id":"e","order_id":"o","amount_cents":1,"currency":"CNY","status":"failed"}`, "unsupported-payment"},
		} {
			body := []byte(tc.body)
			r := e.do(http.MethodPost, "/v1/payments/webhook", body, map[string]string{webhook.Header: webhook.Sign(time.Now(), body, testSecret)})
			if r.status != http.StatusBadRequest {
				t.Errorf("%s: got %s, want 400", tc.name, r)
				continue
			}
			if p := r.problem(t); p.Type != api.ProblemTypeBase+tc.kind {
				t.Errorf("%s: problem %+v, want %s", tc.name, p, tc.kind)
			}
		}
	})

	t.Run("transient_failure_is_5xx", func(t *testing.T) {
		t.Parallel()
		down := serveAPI(t, e.Env, func(d *api.Deps) { d.Temporal = sagatest.DeadTemporal(t) })
		ev := api.PaymentEvent{EventID: "evt-transient", OrderID: "o-x", AmountCents: 1, Currency: testCurrency, Status: "succeeded"}
		r := down.pay(ev, time.Now(), testSecret)
		if r.status < 500 {
			t.Fatalf("got %s, want 5xx", r)
		}
		r.problem(t)
		if n := e.countRows("payments", "event_id = ?", ev.EventID); n != 0 {
			t.Errorf("%d rows recorded by a failed delivery", n)
		}
	})
}
