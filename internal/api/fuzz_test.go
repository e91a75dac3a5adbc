package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ordersaga/ordersaga"
)

// The request decoders as fuzz targets. `go test` runs the seeds below; scripts/fuzz.sh runs each for a while.

// FuzzOrderRequest: any body either is refused (invalid-body, or invalid-field naming a field of the request)
// or is an order the placement rules accept, whose canonical re-encoding decodes to the same request. It never
// panics.
func FuzzOrderRequest(f *testing.F) {
	for _, seed := range []string{
		`{"user_id":"u-1","lines":[{"sku":"SKU-1","qty":2}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":1},{"sku":"B","qty":3}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":1},{"sku":"A","qty":1}]}`,
		`{"user_id":"u-1","lines":[]}`,
		`{"user_id":"","lines":[{"sku":"A","qty":1}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":-1}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":9223372036854775807}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":1.5}]}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":1}],"extra":1}`,
		`{"user_id":"u-1","lines":[{"sku":"A","qty":1}]} {}`,
		`{"user_id":"u\u0000","lines":[{"sku":"A","qty":1}]}`,
		`{"user_id":"u-1","lines":null}`,
		`[]`, `null`, ``, `{`, "\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	fields := map[string]bool{"user_id": true, "lines": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req orderRequest
		if err := decodeStrict(body, &req); err != nil {
			return // invalid-body
		}
		if ferr := req.validate(); ferr != nil {
			if ferr.Field == "" || ferr.Reason == "" {
				t.Fatalf("invalid-field without a field or a reason: %+v for %q", ferr, body)
			}
			name := ferr.Field
			if i := indexOfBracket(name); i >= 0 {
				name = name[:i]
			}
			if !fields[name] {
				t.Fatalf("invalid-field names %q, which the request has not, for %q", ferr.Field, body)
			}
			return
		}
		if !ordersaga.ValidName(req.UserID) || len(req.Lines) == 0 || len(req.Lines) > ordersaga.MaxLines {
			t.Fatalf("accepted %q: %+v", body, req)
		}
		seen := map[string]bool{}
		for _, l := range req.Lines {
			if l.Qty < 1 || l.Qty > ordersaga.MaxQty || !ordersaga.ValidName(l.SKU) || seen[l.SKU] {
				t.Fatalf("accepted a bad line %+v in %q", l, body)
			}
			seen[l.SKU] = true
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var back orderRequest
		if err := decodeStrict(again, &back); err != nil || !reflect.DeepEqual(back, req) {
			t.Fatalf("re-encoded %s decodes to %+v (%v), want %+v", again, back, err, req)
		}
	})
}

func indexOfBracket(s string) int {
	for i := range len(s) {
		if s[i] == '[' || s[i] == '.' {
			return i
		}
	}
	return -1
}

// FuzzPaymentEvent: any webhook body either is refused (invalid-body, or invalid-field naming a field of the
// event) or is an event whose fields are in range. It never panics.
func FuzzPaymentEvent(f *testing.F) {
	for _, seed := range []string{
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":1998,"currency":"CNY","status":"succeeded"}`,
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":-1,"currency":"CNY","status":"succeeded"}`,
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":20000000000000001,"currency":"CNY","status":"succeeded"}`,
		`{"event_id":"","order_id":"o-1","amount_cents":1,"currency":"CNY","status":"succeeded"}`,
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":1,"currency":"cny","status":"succeeded"}`,
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":1,"currency":"CNY","status":"failed"}`,
		`{"event_id":"evt 1","order_id":"o-1","amount_cents":1e3,"currency":"CNY","status":"succeeded"}`,
		`{"event_id":"evt-1","order_id":"o-1","amount_cents":1,"currency":"CNY","status":"succeeded","x":1}`,
		`{}`, `null`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	fields := map[string]bool{"event_id": true, "order_id": true, "amount_cents": true, "currency": true}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev PaymentEvent
		if err := decodeStrict(body, &ev); err != nil {
			return
		}
		if ferr := validatePayment(ev); ferr != nil {
			if !fields[ferr.Field] || ferr.Reason == "" {
				t.Fatalf("invalid-field %+v for %q", ferr, body)
			}
			return
		}
		if ev.EventID == "" || len(ev.EventID) > 255 || ev.OrderID == "" || len(ev.OrderID) > 64 || ev.AmountCents < 0 || ev.AmountCents > ordersaga.MaxAmountCents || len(ev.Currency) != 3 {
			t.Fatalf("accepted %q: %+v", body, ev)
		}
	})
}
