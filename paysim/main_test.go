package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
)

const secret = "whsec-paysim-test"

// TestPaysim plays the provider against the real order API: pay, pay twice, a wrong amount, a late payment,
// a stale signature.
func TestPaysim(t *testing.T) {
	t.Parallel()
	env := sagatest.Start(t)
	env.Stock(t, "PS-1", 100, 1999)
	srv := httptest.NewServer(api.NewServer(api.Deps{
		Temporal: env.Client, Store: env.Store, Redis: env.Redis, Currency: "CNY", PaymentTimeout: time.Minute,
		WebhookSecrets: []string{secret}, AdminToken: "admin",
		PlaceTimeout: 2 * time.Minute, UpdateTimeout: 2 * time.Minute,
	}))
	t.Cleanup(srv.Close)
	getenv := func(k string) string {
		return map[string]string{"ORDERSAGA_URL": srv.URL, "PAYMENT_WEBHOOK_SECRET": secret + ",older"}[k]
	}
	place := func(key string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/orders", strings.NewReader(`{"user_id":"u-ps","lines":[{"sku":"PS-1","qty":1}]}`))
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var o ordersaga.Order
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &o) != nil {
			t.Fatalf("place: %d %s", res.StatusCode, b)
		}
		return o.OrderID
	}
	paysim := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"paysim"}, args...), getenv, &out, io.Discard)
		return out.String(), err
	}
	want := func(out string, err error, wantErr bool, results ...string) {
		t.Helper()
		if (err != nil) != wantErr {
			t.Errorf("error %v (want one: %v); output:\n%s", err, wantErr, out)
		}
		if err != nil {
			out += "error: " + err.Error()
		}
		for _, r := range results {
			if !strings.Contains(out, r) {
				t.Errorf("output lacks %q:\n%s", r, out)
			}
		}
	}

	paid := place("k-ps-1")
	out, err := paysim("pay", "--twice", paid)
	want(out, err, false, `"result":"applied"`, `"result":"duplicate"`, "AWAITING_PAYMENT, amount 1999")
	out, err = paysim("pay", paid)
	want(out, err, true, "is PAID", "-late")
	out, err = paysim("-late", "pay", paid, "-event-id", "evt-ps-late")
	want(out, err, false, `"result":"refunded"`, "evt-ps-late")

	other := place("k-ps-2")
	out, err = paysim("pay", other, "--amount", "1")
	want(out, err, false, `"result":"rejected_amount"`)
	out, err = paysim("pay", "--stale", other)
	want(out, err, true, "401", "invalid-signature")
	out, err = paysim("pay", "--secret", "wrong", other)
	want(out, err, true, "401")

	out, err = paysim("pay")
	want(out, err, true, "usage")
}
