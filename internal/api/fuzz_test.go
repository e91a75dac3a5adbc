package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
)

// FuzzDecodeOrder posts arbitrary Idempotency-Keys and bodies to POST /v1/orders on a real saga: never a
// panic or a 5xx, and a request refused as invalid (400, 404, 422) starts no workflow. The seeds run with
// every `go test`; `go test -fuzz FuzzDecodeOrder ./internal/api` explores further.
func FuzzDecodeOrder(f *testing.F) {
	for _, seed := range []struct{ key, body string }{
		{"k-1", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1}]}`},
		{"k-2", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1},{"sku":"FZ-2","qty":3}]}`},
		{"k-3", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1000}]}`},
		{"k-4", `{"user_id":"u-1","lines":[{"sku":"NOPE","qty":1}]}`},
		{"", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1}]}`},
		{"k:5.a_b-c", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":0}]}`},
		{"k-6", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1}]}{}`},
		{"k-7", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1e3}]}`},
		{"k-8", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":9223372036854775808}]}`},
		{"k-9", `{"user_id":"u-1","Lines":[{"SKU":"FZ-1","qty":1}]}`},
		{"k-10", `{"user_id":"u\u00e9","lines":[{"sku":"FZ-1","qty":1}]}`},
		{"k-11", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1},{"sku":"FZ-1","qty":1}]}`},
		{"k-12", `{"user_id":"u-1","lines":{"sku":"FZ-1"}}`},
		{"k-13", `null`},
		{"k-14", `{"user_id":null,"lines":[null]}`},
		{"k-15", "\xff\xfe{"},
		{"k-16", `{"user_id":"u-1","lines":[{"sku":"FZ-1","qty":1}],"user_id":"u-2"}`},
		{"k-1", `{"user_id":"u-1","lines":[{"sku":"FZ-2","qty":1}]}`}, // the key again, another body: 422
		{strings.Repeat("k", 256), `{}`},
	} {
		f.Add(seed.key, seed.body)
	}
	env := sagatest.Start(f)
	env.Stock(f, "FZ-1", 1000000, 100)
	env.Stock(f, "FZ-2", 1000000, 100)
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(api.NewServer(api.Deps{
		Temporal: env.Client, Store: env.Store, Redis: env.Redis, Registry: reg, Currency: testCurrency,
		PaymentTimeout: time.Minute, WebhookSecrets: []string{testSecret}, AdminToken: testAdmin,
		PlaceTimeout: 2 * time.Minute,
	}))
	f.Cleanup(srv.Close)

	f.Fuzz(func(t *testing.T, key, body string) {
		before := counterValue(t, reg, "ordersaga_order_workflow_places_total", nil)
		h := map[string]string{}
		if key != "" && sendable(key) {
			h["Idempotency-Key"] = key
		}
		r := doRequest(t, http.MethodPost, srv.URL+"/v1/orders", []byte(body), h)
		if r.status >= 500 {
			t.Fatalf("key %q body %q: %s", key, body, r)
		}
		switch r.status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity:
			r.problem(t)
			if after := counterValue(t, reg, "ordersaga_order_workflow_places_total", nil); after != before {
				t.Errorf("key %q body %q: refused with %d but placed %v orders", key, body, r.status, after-before)
			}
		case http.StatusCreated, http.StatusConflict:
		default:
			t.Errorf("key %q body %q: unexpected %s", key, body, r)
		}
	})
}

// sendable reports whether an HTTP client can send v as a header value (no control characters, a sane size).
func sendable(v string) bool {
	if len(v) > 4096 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
