package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// putInventory sets a SKU through the admin endpoint and returns the inventory body.
func (e *apiEnv) putInventory(sku string, body string) response {
	e.t.Helper()
	return e.do(http.MethodPut, "/v1/inventory/"+sku, []byte(body), map[string]string{"Authorization": "Bearer " + testAdmin})
}

// The per-user limit through the HTTP API: the admin sets it, the view shows it, and one user firing 200
// concurrent requests with 200 distinct Idempotency-Keys on a limit of 2 gets exactly 2 units; every other
// request is 409 limit-exceeded naming the SKU, the limit and the 2 units held (not remembered: the key may
// succeed later). A cancel frees one unit exactly once: one more order of the user then succeeds, the next
// one does not.
func TestPerUserLimit_ThroughTheAPI(t *testing.T) {
	// No order may expire while the test runs (under -race on a loaded machine 200 placements can take longer
	// than a minute): an expired order frees its units, and a later request would rightly get them.
	// All 200 are admitted at once (PLACE_PER_SKU): this test is about the limit, not about the line, in which
	// a request past the units being placed waits its turn (TestPlace_InLinePastTheUnitsBeingPlaced).
	e := newAPI(t, func(d *api.Deps) { d.PaymentTimeout, d.PlacePerSKU = time.Hour, 1000 })
	const sku = "LIM-API"
	r := e.putInventory(sku, `{"stock":1000,"price_cents":500,"per_user_limit":2}`)
	var inv api.InventoryBody
	if r.status != http.StatusOK || json.Unmarshal(r.body, &inv) != nil || inv.PerUserLimit != 2 {
		t.Fatalf("PUT with per_user_limit 2: %s", r)
	}
	if r := e.do(http.MethodGet, "/v1/inventory/"+sku, nil, nil); !bytes.Contains(r.body, []byte(`"per_user_limit":2`)) {
		t.Fatalf("GET inventory: %s, want per_user_limit 2", r)
	}
	for _, bad := range []string{`{"stock":10,"price_cents":5,"per_user_limit":-1}`, `{"stock":10,"price_cents":5,"per_user_limit":"2"}`} {
		r := e.putInventory(sku, bad)
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte("per_user_limit")) {
			t.Errorf("PUT %s: %s, want 400 naming per_user_limit", bad, r)
		}
	}

	n := testenv.Scaled(200, 50) // 200 concurrent requests; 50 under the race detector (the same code, slower)
	body := orderBody("bot", ordersaga.Line{SKU: sku, Qty: 1})
	statuses := make([]int, n)
	problems := make([]api.Problem, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/orders", bytes.NewReader([]byte(body)))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bot-key-%03d", i))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			statuses[i], errs[i] = res.StatusCode, err
			if res.StatusCode == http.StatusConflict {
				errs[i] = json.Unmarshal(b, &problems[i])
			}
		})
	}
	wg.Wait()
	granted := 0
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("request %d: %v", i, errs[i])
		case statuses[i] == http.StatusCreated:
			granted++
		case statuses[i] != http.StatusConflict:
			t.Errorf("request %d: status %d, want 201 or 409", i, statuses[i])
		default:
			p := problems[i]
			if p.Type != api.ProblemTypeBase+"limit-exceeded" || p.SKU != sku || p.PerUserLimit == nil || *p.PerUserLimit != 2 || p.Held == nil || *p.Held != 2 {
				t.Errorf("request %d: problem %+v, want limit-exceeded of %s, per_user_limit 2, held 2", i, p, sku)
			}
		}
	}
	if granted != 2 {
		t.Fatalf("%d of %d requests of one user granted on a limit of 2, want 2", granted, n)
	}
	if got := e.countRows("orders", "user_id = ? AND status = ?", "bot", string(ordersaga.StatusAwaitingPayment)); got != 2 {
		t.Errorf("orders of the bot awaiting payment = %d, want 2", got)
	}
	fast := e.counter("ordersaga_reserve_outcomes_total", "outcome", "limit_exceeded_fast_path")
	t.Logf("%d requests of one user, limit 2: %d granted, %.0f refused from Redis alone, %.0f by their workflow", n, granted, fast,
		e.counter("ordersaga_reserve_outcomes_total", "outcome", "limit_exceeded"))

	// A refused key is not remembered: after a cancel it succeeds, once.
	var first ordersaga.Order
	for i := range n {
		if statuses[i] == http.StatusCreated {
			first = e.place(fmt.Sprintf("bot-key-%03d", i), body).order(t)
			break
		}
	}
	if r := e.do(http.MethodPost, "/v1/orders/"+first.OrderID+"/cancel", nil, nil); r.status != http.StatusOK {
		t.Fatalf("cancel: %s", r)
	}
	if r := e.do(http.MethodPost, "/v1/orders/"+first.OrderID+"/cancel", nil, nil); r.status != http.StatusOK {
		t.Fatalf("cancel again: %s", r)
	}
	refused := -1
	for i := range n {
		if statuses[i] == http.StatusConflict {
			refused = i
			break
		}
	}
	if r := e.place(fmt.Sprintf("bot-key-%03d", refused), body); r.status != http.StatusCreated {
		t.Fatalf("a refused key after a cancel freed a unit: %s, want 201", r)
	}
	// Redis knows the user holds 2: a new key is refused from the fast path, without a workflow.
	before := e.counter("ordersaga_reserve_outcomes_total", "outcome", "limit_exceeded_fast_path")
	r = e.place("bot-key-after", body)
	r.wantProblem(t, http.StatusConflict, "limit-exceeded")
	if after := e.counter("ordersaga_reserve_outcomes_total", "outcome", "limit_exceeded_fast_path"); after != before+1 {
		t.Errorf("limit_exceeded_fast_path went from %.0f to %.0f, want one more (refused from Redis alone)", before, after)
	}
}
