package api

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/placement"
)

// TestWritePlaced pins the answer of every placement outcome byte for byte (docs/http-api.md, POST
// /v1/orders): status, headers, body, and the outcome it is counted under.
func TestWritePlaced(t *testing.T) {
	const base = "https://ordersaga.dev/problems/"
	kept := []byte(`{"order_id":"o-1","status":"AWAITING_PAYMENT"}` + "\n")
	keptProblem := []byte(`{"type":"` + base + `sold-out"}` + "\n")
	for _, c := range []struct {
		name    string
		out     placement.Outcome
		status  int
		headers map[string]string // besides Content-Type, Content-Length and X-Content-Type-Options
		ctype   string
		body    string
		label   string
	}{
		{"reserved", placement.Outcome{Kind: placement.Reserved, OrderID: "o-1", Answer: placement.Answer{Status: 201, Body: kept}},
			201, map[string]string{"Location": "/v1/orders/o-1"}, "application/json", string(kept), "reserved"},
		{"replayed", placement.Outcome{Kind: placement.Replayed, OrderID: "o-1", Answer: placement.Answer{Status: 201, Body: kept}},
			201, map[string]string{"Location": "/v1/orders/o-1", "Idempotent-Replayed": "true"}, "application/json", string(kept), "replayed"},
		{"replayed_problem", placement.Outcome{Kind: placement.Replayed, OrderID: "o-1", Answer: placement.Answer{Status: 409, Body: keptProblem}},
			409, map[string]string{"Idempotent-Replayed": "true"}, "application/problem+json", string(keptProblem), "replayed"},
		{"sold_out_fast_path", placement.Outcome{Kind: placement.SoldOut, SKU: "S-1", FastPath: true},
			409, nil, "application/problem+json",
			`{"type":"` + base + `sold-out","title":"Sold out","status":409,"detail":"not enough units of S-1 for this order; the same Idempotency-Key may be retried later","sku":"S-1"}`,
			"sold_out_fast_path"},
		{"sold_out_by_the_saga", placement.Outcome{Kind: placement.SoldOut, SKU: "S-1"},
			409, nil, "application/problem+json",
			`{"type":"` + base + `sold-out","title":"Sold out","status":409,"detail":"not enough units of S-1 for this order; the same Idempotency-Key may be retried later","sku":"S-1"}`,
			"sold_out"},
		{"in_line", placement.Outcome{Kind: placement.InLine, SKU: "S-1", Position: 41, Wait: 2040 * time.Millisecond, RetryAfter: 2 * time.Second},
			503, map[string]string{"Retry-After": "2", "Queue-Position": "41", "Queue-Estimated-Wait": "2.1"}, "application/problem+json",
			`{"type":"` + base + `in-line","title":"Waiting in line","status":503,"detail":"41 orders are ahead of this one in the line for S-1 (about 2.1 s); retry with the same Idempotency-Key within Retry-After to keep the place","sku":"S-1","position":41,"estimated_wait_seconds":2.1}`,
			"in_line"},
		{"unknown_sku", placement.Outcome{Kind: placement.UnknownSKU, SKU: "S-1"},
			404, nil, "application/problem+json",
			`{"type":"` + base + `unknown-sku","title":"Unknown SKU","status":404,"detail":"no SKU S-1 in the inventory","sku":"S-1"}`,
			"unknown_sku"},
		{"rejected", placement.Outcome{Kind: placement.Rejected, OrderID: "o-1", Reason: "reservation failed: redis"},
			503, map[string]string{"Retry-After": "2"}, "application/problem+json",
			`{"type":"` + base + `stock-unavailable","title":"The stock could not be reserved right now","status":503,"detail":"the stock could not be reserved: reservation failed: redis","order_id":"o-1"}`,
			"rejected"},
		{"key_reused", placement.Outcome{Kind: placement.KeyReused},
			422, nil, "application/problem+json",
			`{"type":"` + base + `idempotency-key-reused","title":"The Idempotency-Key was used with another request body","status":422,"detail":"this Idempotency-Key was first used with another request body; use a new key for a new order"}`,
			"key_reused"},
		{"pending", placement.Outcome{Kind: placement.Pending, OrderID: "o-1"},
			409, map[string]string{"Retry-After": "2"}, "application/problem+json",
			`{"type":"` + base + `order-pending","title":"The order is still being decided","status":409,"detail":"the reservation is not decided yet; retry with the same Idempotency-Key","order_id":"o-1"}`,
			"pending"},
		{"unavailable", placement.Outcome{Kind: placement.Unavailable, Service: "redis", Err: errors.New("down")},
			503, map[string]string{"Retry-After": "2"}, "application/problem+json",
			`{"type":"` + base + `unavailable","title":"A backing service is unavailable","status":503,"detail":"redis is unavailable; retry with the same Idempotency-Key"}`,
			"unavailable"},
		{"no_outcome", placement.Outcome{},
			500, nil, "application/problem+json",
			`{"type":"` + base + `internal","title":"Internal error","status":500,"detail":"the order could not be placed; retry with the same Idempotency-Key"}`,
			"error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			label := writePlaced(w, c.out)
			body := c.body
			if body[len(body)-1] != '\n' {
				body += "\n"
			}
			want := http.Header{
				"Content-Type":           {c.ctype},
				"Content-Length":         {strconv.Itoa(len(body))},
				"X-Content-Type-Options": {"nosniff"},
			}
			for k, v := range c.headers {
				want.Set(k, v)
			}
			if w.Code != c.status || w.Body.String() != body {
				t.Errorf("answer %d %s\nwant   %d %s", w.Code, w.Body, c.status, body)
			}
			if got := w.Header(); len(got) != len(want) {
				t.Errorf("headers %v, want %v", got, want)
			} else {
				for k := range want {
					if got.Get(k) != want.Get(k) {
						t.Errorf("header %s = %q, want %q", k, got.Get(k), want.Get(k))
					}
				}
			}
			if label != c.label {
				t.Errorf("counted as %q, want %q", label, c.label)
			}
		})
	}
}

// The kept first answer of a reserved order is the order as the API writes JSON: HTML characters as they
// are, a newline at the end (answers kept by earlier versions are replayed as stored).
func TestKeepAs(t *testing.T) {
	o := ordersaga.Order{OrderID: "o-1", UserID: "u<&>", Status: ordersaga.StatusAwaitingPayment}
	a := keepAs(o)
	if a.Status != http.StatusCreated || string(a.Body) != string(mustJSON(o)) || a.Body[len(a.Body)-1] != '\n' {
		t.Errorf("keepAs = %d %s", a.Status, a.Body)
	}
	if want := `"user_id":"u<&>"`; !bytes.Contains(a.Body, []byte(want)) {
		t.Errorf("keepAs body %s lacks %s", a.Body, want)
	}
}
