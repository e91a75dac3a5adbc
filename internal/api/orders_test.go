package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestPlaceOrder covers every row of docs/http-api.md's POST /v1/orders table on one saga.
func TestPlaceOrder(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	e.Stock(t, "SKU-1", 100, 999)
	e.Stock(t, "SKU-2", 100, 500)

	t.Run("reserved_201_with_location_and_db_prices", func(t *testing.T) {
		t.Parallel()
		r := e.place("k-reserved", orderBody("u-1", ordersaga.Line{SKU: "SKU-1", Qty: 2}, ordersaga.Line{SKU: "SKU-2", Qty: 1}))
		if r.status != http.StatusCreated {
			t.Fatalf("got %s, want 201", r)
		}
		o := r.order(t)
		if want := e.KeyOrderID(t, "u-1", "k-reserved"); o.OrderID != want {
			t.Errorf("order_id %s, want %s (the key's row's)", o.OrderID, want)
		}
		if loc := r.header.Get("Location"); loc != "/v1/orders/"+o.OrderID {
			t.Errorf("Location %q", loc)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if o.Status != ordersaga.StatusAwaitingPayment || o.UserID != "u-1" || o.AmountCents != 2*999+500 || o.PayBy == nil {
			t.Errorf("order %+v: want AWAITING_PAYMENT for u-1, amount %d and a pay_by", o, 2*999+500)
		}
		want := []ordersaga.Line{{SKU: "SKU-1", Qty: 2, UnitPriceCents: 999}, {SKU: "SKU-2", Qty: 1, UnitPriceCents: 500}}
		if fmt.Sprint(o.Lines) != fmt.Sprint(want) {
			t.Errorf("lines %v, want %v", o.Lines, want)
		}
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Error("first answer marked as replayed")
		}
	})

	t.Run("same_key_same_body_replays_the_first_answer_byte_for_byte", func(t *testing.T) {
		// Not parallel: the places counter is the whole API's, and a sibling placing an order between the two
		// readings moved it (2 -> 3 in a CI run). The parallel siblings wait until this one has run.
		body := orderBody("u-2", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "SKU-2", Qty: 3})
		first := e.place("k-replay", body)
		if first.status != http.StatusCreated {
			t.Fatalf("first: %s", first)
		}
		places := e.counter("ordersaga_order_workflow_places_total")
		for _, again := range []string{
			body,
			// The same lines listed in another order are the same request.
			orderBody("u-2", ordersaga.Line{SKU: "SKU-2", Qty: 3}, ordersaga.Line{SKU: "SKU-1", Qty: 1}),
		} {
			r := e.place("k-replay", again)
			if r.status != first.status || !bytes.Equal(r.body, first.body) {
				t.Errorf("replay: got %s\nwant %s", r, first)
			}
			if r.header.Get("Idempotent-Replayed") != "true" {
				t.Error("replay without Idempotent-Replayed: true")
			}
			if r.header.Get("Location") != first.header.Get("Location") {
				t.Errorf("replay Location %q, first %q", r.header.Get("Location"), first.header.Get("Location"))
			}
		}
		if got := e.counter("ordersaga_order_workflow_places_total"); got != places {
			t.Errorf("a replay placed the order again (%v -> %v)", places, got)
		}
	})

	t.Run("same_key_other_body_is_422", func(t *testing.T) {
		t.Parallel()
		if r := e.place("k-changed", orderBody("u-3", ordersaga.Line{SKU: "SKU-1", Qty: 1})); r.status != http.StatusCreated {
			t.Fatalf("first: %s", r)
		}
		r := e.place("k-changed", orderBody("u-3", ordersaga.Line{SKU: "SKU-1", Qty: 2}))
		r.wantProblem(t, http.StatusUnprocessableEntity, "idempotency-key-reused")
		if n := e.countRows("orders", "user_id = ?", "u-3"); n != 1 {
			t.Errorf("%d orders of u-3, want 1", n)
		}
	})

	t.Run("unknown_sku_is_404_naming_it", func(t *testing.T) {
		t.Parallel()
		r := e.place("k-unknown", orderBody("u-5", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "NOPE", Qty: 1}))
		p := r.wantProblem(t, http.StatusNotFound, "unknown-sku")
		if p.SKU != "NOPE" || !strings.Contains(p.Detail, "NOPE") {
			t.Errorf("problem %+v does not name NOPE", p)
		}
		// Nothing is placed before the key is claimed: no row, no order ID, no workflow.
		if id := e.KeyOrderID(t, "u-5", "k-unknown"); id != "" {
			t.Errorf("an unknown SKU claimed the key (order %s)", id)
		}
	})

	t.Run("bad_key_json_or_line_is_400", func(t *testing.T) {
		t.Parallel()
		testBadRequests(t, serveAPI(t, e.Env)) // a server of its own: its metrics count only these requests
	})
}

// testBadRequests posts every kind of invalid request: each is a 400 problem (naming the field when one is
// at fault) and places nothing.
func testBadRequests(t *testing.T, e *apiEnv) {
	good := orderBody("u-bad", ordersaga.Line{SKU: "SKU-1", Qty: 1})
	lines := func(n int) string {
		var ls []string
		for i := range n {
			ls = append(ls, fmt.Sprintf(`{"sku":"S-%d","qty":1}`, i))
		}
		return `{"user_id":"u-bad","lines":[` + strings.Join(ls, ",") + `]}`
	}
	tests := []struct {
		name, key, body string
		kind, field     string
	}{
		{"missing_key", "", good, "invalid-idempotency-key", ""},
		{"key_with_a_space", "a b", good, "invalid-idempotency-key", ""},
		{"key_with_a_slash", "a/b", good, "invalid-idempotency-key", ""},
		{"key_of_256_chars", strings.Repeat("k", 256), good, "invalid-idempotency-key", ""},
		{"empty_body", "k", "", "invalid-body", ""},
		{"not_json", "k", "user_id=u", "invalid-body", ""},
		{"array", "k", `[1]`, "invalid-body", ""},
		{"unknown_field", "k", `{"user_id":"u-bad","lines":[{"sku":"SKU-1","qty":1}],"coupon":"x"}`, "invalid-body", ""},
		{"unknown_line_field", "k", `{"user_id":"u-bad","lines":[{"sku":"SKU-1","qty":1,"price":1}]}`, "invalid-body", ""},
		{"field_in_other_case", "k", `{"USER_ID":"u-bad","lines":[{"sku":"SKU-1","qty":1}]}`, "invalid-body", ""},
		{"trailing_data", "k", good + `{}`, "invalid-body", ""},
		{"trailing_garbage", "k", good + `x`, "invalid-body", ""},
		{"qty_as_string", "k", `{"user_id":"u-bad","lines":[{"sku":"SKU-1","qty":"1"}]}`, "invalid-body", ""},
		{"qty_fraction", "k", `{"user_id":"u-bad","lines":[{"sku":"SKU-1","qty":1.5}]}`, "invalid-body", ""},
		{"body_over_64KiB", "k", `{"user_id":"u-bad","lines":[{"sku":"SKU-1","qty":1}],"x":"` + strings.Repeat("x", 64<<10) + `"}`, "body-too-large", ""},
		{"no_user", "k", `{"lines":[{"sku":"SKU-1","qty":1}]}`, "invalid-field", "user_id"},
		{"user_with_colon", "k", orderBody("u:1", ordersaga.Line{SKU: "SKU-1", Qty: 1}), "invalid-field", "user_id"},
		{"user_of_65_chars", "k", orderBody(strings.Repeat("u", 65), ordersaga.Line{SKU: "SKU-1", Qty: 1}), "invalid-field", "user_id"},
		{"no_lines", "k", `{"user_id":"u-bad","lines":[]}`, "invalid-field", "lines"},
		{"null_lines", "k", `{"user_id":"u-bad","lines":null}`, "invalid-field", "lines"},
		{"21_lines", "k", lines(21), "invalid-field", "lines"},
		{"qty_0", "k", orderBody("u-bad", ordersaga.Line{SKU: "SKU-1", Qty: 0}), "invalid-field", "lines[0].qty"},
		{"qty_1001", "k", orderBody("u-bad", ordersaga.Line{SKU: "SKU-1", Qty: 1001}), "invalid-field", "lines[0].qty"},
		{"qty_negative", "k", orderBody("u-bad", ordersaga.Line{SKU: "SKU-1", Qty: -1}), "invalid-field", "lines[0].qty"},
		{"sku_empty", "k", orderBody("u-bad", ordersaga.Line{SKU: "", Qty: 1}), "invalid-field", "lines[0].sku"},
		{"sku_with_space", "k", orderBody("u-bad", ordersaga.Line{SKU: "SKU 1", Qty: 1}), "invalid-field", "lines[0].sku"},
		{"sku_of_65_chars", "k", orderBody("u-bad", ordersaga.Line{SKU: strings.Repeat("S", 65), Qty: 1}), "invalid-field", "lines[0].sku"},
		{"duplicate_sku", "k", orderBody("u-bad", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "SKU-1", Qty: 2}), "invalid-field", "lines[1].sku"},
	}
	places := e.counter("ordersaga_order_workflow_places_total")
	for _, tc := range tests {
		r := e.place(tc.key, tc.body)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: got %s, want 400", tc.name, r)
			continue
		}
		p := r.problem(t)
		if p.Type != api.ProblemTypeBase+tc.kind || p.Field != tc.field {
			t.Errorf("%s: problem %+v, want type %s field %q", tc.name, p, tc.kind, tc.field)
		}
	}
	if got := e.counter("ordersaga_order_workflow_places_total"); got != places {
		t.Errorf("invalid requests placed %v orders", got-places)
	}
	if n := e.countRows("idempotency_keys", "user_id = ?", "u-bad"); n != 0 {
		t.Errorf("invalid requests left %d idempotency rows", n)
	}
}

// TestPlaceOrder_Refusals covers the refusals of docs/http-api.md's POST /v1/orders table over HTTP: 409
// sold-out from the fast path, the admission gate and the saga (not remembered: a retry is refused afresh),
// 409 order-pending and 503 unavailable with Retry-After, each counted under its outcome. Which refusal a
// request gets, and what it leaves behind, is the placement service's rule (internal/placement's tests).
func TestPlaceOrder_Refusals(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()
	outcomes := func(e *apiEnv, outcome string) float64 {
		return e.counter("ordersaga_reserve_outcomes_total", "outcome", outcome)
	}
	soldOut := func(t *testing.T, r response, sku, detail string) {
		t.Helper()
		p := r.wantProblem(t, http.StatusConflict, "sold-out")
		if p.SKU != sku || !strings.Contains(p.Detail, sku) || !strings.Contains(p.Detail, detail) {
			t.Errorf("problem %+v: want sku %s and a detail with %q", p, sku, detail)
		}
		if r.header.Get("Retry-After") != "" || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("sold-out with Retry-After %q, Idempotent-Replayed %q; want neither", r.header.Get("Retry-After"), r.header.Get("Idempotent-Replayed"))
		}
	}

	t.Run("fast_path_sold_out_is_409_naming_the_sku", func(t *testing.T) {
		e.Stock(t, "R-FAST", 0, 100)
		before := outcomes(e, "sold_out_fast_path")
		soldOut(t, e.place("k-r-fast", orderBody("u-r", ordersaga.Line{SKU: "R-FAST", Qty: 1})), "R-FAST", "not enough units")
		if got := outcomes(e, "sold_out_fast_path"); got != before+1 {
			t.Errorf("sold_out_fast_path counted %v, want 1", got-before)
		}
	})

	// The line never answers sold out while units are only being placed: a request whose units are all counted
	// by another placement waits its turn (placement/gate.go), and is answered 503 in-line with its position, the
	// SKU and a Retry-After if its turn has not come within the server's hold, with nothing done for the key but
	// its ticket, which a retry with the key keeps and is admitted with once the units free.
	t.Run("in_line_is_503_with_the_position_not_sold_out", func(t *testing.T) {
		e.Stock(t, "R-GATE", 1, 100)
		adm, turn, err := e.Gate.Admit(ctx, admission.Ticket{}, []ordersaga.Line{{SKU: "R-GATE", Qty: 1}}, nil, time.Minute)
		if err != nil || adm == nil {
			t.Fatalf("admit another placement: %+v %v", turn, err)
		}
		before := outcomes(e, "in_line")
		body := orderBody("u-r", ordersaga.Line{SKU: "R-GATE", Qty: 1})
		r := e.place("k-r-gate", body)
		p := r.wantProblem(t, http.StatusServiceUnavailable, "in-line")
		if p.SKU != "R-GATE" || p.Position == nil || *p.Position != 0 || r.header.Get("Queue-Position") != "0" || r.header.Get("Retry-After") != "1" {
			t.Errorf("in-line answer %s: want the SKU, position 0 in body and header, Retry-After 1", r)
		}
		if got := outcomes(e, "in_line"); got != before+1 {
			t.Errorf("in_line counted %v, want 1", got-before)
		}
		if line, err := e.Gate.Line(ctx, "R-GATE"); err != nil || len(line) != 1 {
			t.Errorf("the line of R-GATE is %v (%v), want the request's ticket", line, err)
		}
		adm.Done(ctx)
		r = e.place("k-r-gate", body)
		if r.status != http.StatusCreated {
			t.Errorf("the retry once the unit freed: %s, want 201", r)
		}
		if line, err := e.Gate.Line(ctx, "R-GATE"); err != nil || len(line) != 0 {
			t.Errorf("the line of R-GATE is %v (%v) after the admission, want empty", line, err)
		}
	})

	t.Run("saga_sold_out_is_409_and_not_remembered", func(t *testing.T) {
		// Redis promises 5 but the database (the truth) has 0: the saga reserves, the deduct refuses.
		if err := e.Store.SetInventory(ctx, "R-SAGA", 0, 700); err != nil {
			t.Fatal(err)
		}
		if err := e.Redis.SetAvailable(ctx, "R-SAGA", 5); err != nil {
			t.Fatal(err)
		}
		body := orderBody("u-r", ordersaga.Line{SKU: "R-SAGA", Qty: 2})
		before := outcomes(e, "sold_out")
		soldOut(t, e.place("k-r-saga", body), "R-SAGA", "not enough units")
		if got := outcomes(e, "sold_out"); got != before+1 {
			t.Errorf("sold_out counted %v, want 1", got-before)
		}
		// Still sold out: refused afresh (soldOut checks there is no Idempotent-Replayed).
		soldOut(t, e.place("k-r-saga", body), "R-SAGA", "not enough units")
	})

	t.Run("undecided_is_409_order_pending_with_retry_after", func(t *testing.T) {
		e.Stock(t, "R-PEND", 10, 100)
		impatient := serveAPI(t, e.Env, func(d *api.Deps) { d.PlaceTimeout = time.Millisecond })
		body := orderBody("u-r-pending", ordersaga.Line{SKU: "R-PEND", Qty: 1})
		r := impatient.place("k-r-pending", body)
		p := r.wantProblem(t, http.StatusConflict, "order-pending")
		if r.header.Get("Retry-After") == "" || p.OrderID != e.KeyOrderID(t, "u-r-pending", "k-r-pending") {
			t.Errorf("pending: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
		}
		if got := outcomes(impatient, "pending"); got != 1 {
			t.Errorf("pending counted %v, want 1", got)
		}
		if r = e.place("k-r-pending", body); r.status != http.StatusCreated || r.order(t).OrderID != p.OrderID {
			t.Errorf("retry of the pending order: %s", r)
		}
	})

	t.Run("a_backing_service_down_is_503_with_retry_after", func(t *testing.T) {
		e.Stock(t, "R-DOWN", 10, 100)
		body := orderBody("u-r-down", ordersaga.Line{SKU: "R-DOWN", Qty: 1})
		for _, down := range []*apiEnv{
			serveAPI(t, e.Env, func(d *api.Deps) { d.Temporal = sagatest.DeadTemporal(t) }),
			serveAPI(t, e.Env, func(d *api.Deps) { d.Redis = deadRedis(t) }),
			serveAPI(t, e.Env, func(d *api.Deps) { d.Store = testenv.DeadStore(t) }),
		} {
			r := down.place("k-r-down", body)
			r.wantProblem(t, http.StatusServiceUnavailable, "unavailable")
			if r.header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if got := outcomes(down, "unavailable"); got != 1 {
				t.Errorf("unavailable counted %v, want 1", got)
			}
		}
		// Nothing was placed: the retry on a healthy server is the first order of the key.
		if r := e.place("k-r-down", body); r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry: %s", r)
		}
	})
}
