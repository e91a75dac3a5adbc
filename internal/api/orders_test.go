package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/serviceerror"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/workflows"
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
		if want := api.OrderID("u-1", "k-reserved", 0); o.OrderID != want {
			t.Errorf("order_id %s, want %s (derived from user and key)", o.OrderID, want)
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
		t.Parallel()
		body := orderBody("u-2", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "SKU-2", Qty: 3})
		first := e.place("k-replay", body)
		if first.status != http.StatusCreated {
			t.Fatalf("first: %s", first)
		}
		places := e.counter("ordersaga_order_workflow_places_total", nil)
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
		if got := e.counter("ordersaga_order_workflow_places_total", nil); got != places {
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

	t.Run("same_key_other_user_is_another_order", func(t *testing.T) {
		t.Parallel()
		a := e.place("k-shared", orderBody("u-4a", ordersaga.Line{SKU: "SKU-1", Qty: 1}))
		b := e.place("k-shared", orderBody("u-4b", ordersaga.Line{SKU: "SKU-1", Qty: 1}))
		if a.status != http.StatusCreated || b.status != http.StatusCreated || a.order(t).OrderID == b.order(t).OrderID {
			t.Errorf("two users with one key: %s and %s, want two orders", a, b)
		}
	})

	t.Run("unknown_sku_is_404_naming_it", func(t *testing.T) {
		t.Parallel()
		r := e.place("k-unknown", orderBody("u-5", ordersaga.Line{SKU: "SKU-1", Qty: 1}, ordersaga.Line{SKU: "NOPE", Qty: 1}))
		p := r.wantProblem(t, http.StatusNotFound, "unknown-sku")
		if p.SKU != "NOPE" || !strings.Contains(p.Detail, "NOPE") {
			t.Errorf("problem %+v does not name NOPE", p)
		}
		if _, err := e.Client.DescribeWorkflowExecution(context.Background(), workflows.OrderWorkflowID(api.OrderID("u-5", "k-unknown", 0)), ""); !isNotFound(err) {
			t.Errorf("a workflow was started for an unknown SKU: %v", err)
		}
	})

	t.Run("bad_key_json_or_line_is_400", func(t *testing.T) {
		t.Parallel()
		testBadRequests(t, serveAPI(t, e.Env)) // a server of its own: its metrics count only these requests
	})
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
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
	places := e.counter("ordersaga_order_workflow_places_total", nil)
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
	if got := e.counter("ordersaga_order_workflow_places_total", nil); got != places {
		t.Errorf("invalid requests placed %v orders", got-places)
	}
	if n := e.countRows("idempotency_keys", "user_id = ?", "u-bad"); n != 0 {
		t.Errorf("invalid requests left %d idempotency rows", n)
	}
}

// TestPlaceOrder_SoldOut: the fast path answers 409 without a workflow; a saga's sold out answers 409 naming
// the SKU and is not remembered (the same key succeeds once there is stock).
func TestPlaceOrder_SoldOut(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()

	t.Run("fast_path_refuses_without_a_workflow", func(t *testing.T) {
		e.Stock(t, "FAST-1", 1, 100)
		e.Stock(t, "FAST-2", 50, 100)
		if r := e.place("k-first", orderBody("u-f1", ordersaga.Line{SKU: "FAST-1", Qty: 1})); r.status != http.StatusCreated {
			t.Fatalf("first order: %s", r)
		}
		places := e.counter("ordersaga_order_workflow_places_total", nil)
		fast := e.counter("ordersaga_reserve_outcomes_total", map[string]string{"outcome": "sold_out_fast_path"})
		for i := range 5 {
			key := fmt.Sprintf("k-late-%d", i)
			r := e.place(key, orderBody("u-f2", ordersaga.Line{SKU: "FAST-2", Qty: 1}, ordersaga.Line{SKU: "FAST-1", Qty: 1}))
			p := r.wantProblem(t, http.StatusConflict, "sold-out")
			if p.SKU != "FAST-1" || !strings.Contains(p.Detail, "FAST-1") {
				t.Errorf("problem %+v does not name FAST-1", p)
			}
			if _, err := e.Client.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(api.OrderID("u-f2", key, 0)), ""); !isNotFound(err) {
				t.Errorf("the fast path started a workflow: %v", err)
			}
		}
		if got := e.counter("ordersaga_order_workflow_places_total", nil); got != places {
			t.Errorf("the fast path placed %v orders", got-places)
		}
		if got := e.counter("ordersaga_reserve_outcomes_total", map[string]string{"outcome": "sold_out_fast_path"}); got != fast+5 {
			t.Errorf("sold_out_fast_path counted %v, want 5", got-fast)
		}
		if n := e.countWorkflows("WorkflowType = 'OrderWorkflow' AND OrderSKUs = 'FAST-2'", 0); n != 0 {
			t.Errorf("%d workflows with FAST-2, want 0", n)
		}
		if n := e.countRows("orders", "user_id = ?", "u-f2"); n != 0 {
			t.Errorf("%d orders of u-f2, want 0", n)
		}
	})

	t.Run("fast_path_keeps_no_state_and_keys_with_state_still_answer", func(t *testing.T) {
		e.Stock(t, "FAST-3", 2, 100)
		body := orderBody("u-f3", ordersaga.Line{SKU: "FAST-3", Qty: 1})
		placed := map[string]response{}
		for _, key := range []string{"k-f3-a", "k-f3-b"} {
			r := e.place(key, body)
			if r.status != http.StatusCreated {
				t.Fatalf("order %s: %s", key, r)
			}
			placed[key] = r
		}
		waitFastPath(t, e, "u-f3", body)

		// A key with state answers from it, though the SKU is sold out: its first answer, or 422.
		again := e.place("k-f3-a", body)
		if again.status != http.StatusCreated || !bytes.Equal(again.body, placed["k-f3-a"].body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay of a placed key on a sold-out SKU: %s, want the first answer replayed", again)
		}
		e.place("k-f3-a", orderBody("u-f3", ordersaga.Line{SKU: "FAST-3", Qty: 2})).wantProblem(t, http.StatusUnprocessableEntity, "idempotency-key-reused")

		// Redis loses the markers (a restart without persistence; the stock counter is reloaded from the
		// database as reconciliation does): the fast path is off until the markers are backfilled from the
		// database, and a placed key still replays meanwhile and after.
		prefix := strings.TrimSuffix(e.Redis.ClaimKey(""), "idem:")
		wiped := deleteKeys(t, e.Redis.Client(), prefix+"idem:*", prefix+"{idem}:*")
		if wiped < 3 {
			t.Fatalf("wiped %d marker keys, want at least the 2 placed keys' and ready", wiped)
		}
		if r := e.place("k-f3-a", body); r.status != http.StatusCreated || !bytes.Equal(r.body, placed["k-f3-a"].body) {
			t.Errorf("replay while the markers are gone: %s", r)
		}
		waitFastPath(t, e, "u-f3", body)
		n, err := e.Redis.Client().Exists(ctx, e.Redis.ClaimKey(api.OrderID("u-f3", "k-f3-b", 0))).Result()
		if err != nil || n != 1 {
			t.Errorf("marker of k-f3-b after the backfill: %d %v, want it back", n, err)
		}
		if r := e.place("k-f3-b", body); r.status != http.StatusCreated || !bytes.Equal(r.body, placed["k-f3-b"].body) {
			t.Errorf("replay after the backfill: %s", r)
		}
	})

	t.Run("admission_gate_refuses_while_the_units_left_are_being_placed", func(t *testing.T) {
		e.Stock(t, "GATE-1", 2, 100)
		body := orderBody("u-g", ordersaga.Line{SKU: "GATE-1", Qty: 1})
		// Two placements of other requests hold the two units left in the gate's count (admitted for real: a
		// count without a live process behind it is reaped).
		var others []*admission.Admission
		for range 2 {
			adm, sku, err := e.Gate.Admit(ctx, []ordersaga.Line{{SKU: "GATE-1", Qty: 1}}, time.Minute)
			if err != nil || sku != "" {
				t.Fatalf("admit another placement: %q %v", sku, err)
			}
			others = append(others, adm)
		}
		defer others[1].Done(ctx)
		places := e.counter("ordersaga_order_workflow_places_total", nil)
		gated := e.counter("ordersaga_reserve_outcomes_total", map[string]string{"outcome": "sold_out_admission"})
		p := e.place("k-gate", body).wantProblem(t, http.StatusConflict, "sold-out")
		if p.SKU != "GATE-1" {
			t.Errorf("problem %+v does not name GATE-1", p)
		}
		if _, err := e.Client.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(api.OrderID("u-g", "k-gate", 0)), ""); !isNotFound(err) {
			t.Errorf("the gate started a workflow: %v", err)
		}
		if got := e.counter("ordersaga_order_workflow_places_total", nil); got != places {
			t.Errorf("the gate placed %v orders", got-places)
		}
		if got := e.counter("ordersaga_reserve_outcomes_total", map[string]string{"outcome": "sold_out_admission"}); got != gated+1 {
			t.Errorf("sold_out_admission counted %v, want 1", got-gated)
		}
		// A key without state is gated before the database (the markers are ready since the subtest above).
		if n := e.countRows("idempotency_keys", "user_id = ?", "u-g"); n != 0 {
			t.Errorf("the gate's refusal wrote %d idempotency rows, want 0", n)
		}
		// One of them is decided: the same key gets the unit, and its own count is gone once it is answered.
		others[0].Done(ctx)
		if r := e.place("k-gate", body); r.status != http.StatusCreated {
			t.Fatalf("retry once a unit is free: %s", r)
		}
		if n, err := e.Gate.Admitting(ctx, "GATE-1"); err != nil || n != 1 {
			t.Errorf("units being placed after the answer: %d %v, want the other request's 1", n, err)
		}
	})

	t.Run("saga_sold_out_is_409_and_the_key_succeeds_later", func(t *testing.T) {
		// Redis promises 5 but the database (the truth) has 0: the saga reserves, the deduct refuses.
		if err := e.Store.SetInventory(ctx, "SAGA-1", 0, 700); err != nil {
			t.Fatal(err)
		}
		if err := e.Redis.SetAvailable(ctx, "SAGA-1", 5); err != nil {
			t.Fatal(err)
		}
		body := orderBody("u-s", ordersaga.Line{SKU: "SAGA-1", Qty: 2})
		r := e.place("k-saga", body)
		p := r.wantProblem(t, http.StatusConflict, "sold-out")
		if p.SKU != "SAGA-1" {
			t.Errorf("problem %+v does not name SAGA-1", p)
		}
		rejected := api.OrderID("u-s", "k-saga", 0)
		var o ordersaga.Order
		if err := e.Client.GetWorkflow(ctx, workflows.OrderWorkflowID(rejected), "").Get(ctx, &o); err != nil || o.Status != ordersaga.StatusRejected {
			t.Fatalf("order %s: %+v %v, want REJECTED", rejected, o, err)
		}
		if r := e.place("k-saga", body); r.status != http.StatusConflict || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("retry while still sold out: %s (replayed %q), want a fresh 409", r, r.header.Get("Idempotent-Replayed"))
		}

		e.Stock(t, "SAGA-1", 10, 700)
		r = e.place("k-saga", body)
		if r.status != http.StatusCreated {
			t.Fatalf("retry after restock: %s, want 201", r)
		}
		o = r.order(t)
		if o.OrderID == rejected {
			t.Errorf("the retry reused the rejected order ID %s", rejected)
		}
		if o.OrderID != api.OrderID("u-s", "k-saga", 1) && o.OrderID != api.OrderID("u-s", "k-saga", 2) {
			t.Errorf("order ID %s is not a later generation of the key", o.OrderID)
		}
		if again := e.place("k-saga", body); !bytes.Equal(again.body, r.body) || again.status != http.StatusCreated {
			t.Errorf("replay after the success: %s, want %s", again, r)
		}
	})
}

// waitFastPath waits until the sold-out fast path answers a new key of user with body without a trace in the
// database: 409 sold-out and no idempotency_keys row (the markers it needs are backfilled in the background
// when a server starts or finds them gone).
func waitFastPath(t *testing.T, e *apiEnv, user, body string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		key := fmt.Sprintf("k-probe-%d-%d", time.Now().UnixNano(), i)
		e.place(key, body).wantProblem(t, http.StatusConflict, "sold-out")
		if e.countRows("idempotency_keys", "user_id = ? AND idem_key = ?", user, key) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sold-out fast path still writes to the database after a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteKeys deletes the keys matching each pattern and returns how many it deleted.
func deleteKeys(t *testing.T, rdb redis.UniversalClient, patterns ...string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, pattern := range patterns {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		n += len(keys)
	}
	return n
}

// TestPlaceOrder_ConcurrentSameKey: 50 requests with one key at once, spread over five API servers (as over
// five starters), make exactly one order and one workflow, and every request gets the same answer.
func TestPlaceOrder_ConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	servers := []*apiEnv{e, serveAPI(t, e.Env), serveAPI(t, e.Env), serveAPI(t, e.Env), serveAPI(t, e.Env)}
	e.Stock(t, "CONC-1", 1000, 250)
	body := orderBody("u-c", ordersaga.Line{SKU: "CONC-1", Qty: 3})
	const n = 50
	answers := make([]response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = servers[i%len(servers)].place("k-concurrent", body)
		})
	}
	close(start)
	wg.Wait()
	var first response
	replayed := 0
	for i, r := range answers {
		if r.status != http.StatusCreated {
			t.Errorf("request %d: %s", i, r)
			continue
		}
		if first.body == nil {
			first = r
		}
		if !bytes.Equal(r.body, first.body) {
			t.Errorf("request %d answered %s, another %s", i, r.body, first.body)
		}
		if r.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Logf("%d of %d answers marked replayed", replayed, n) // the first keeper is not; timing decides the rest
	}
	if got := e.countRows("orders", "user_id = ?", "u-c"); got != 1 {
		t.Errorf("%d orders, want exactly 1", got)
	}
	if got := e.countRows("order_lines", "sku = ?", "CONC-1"); got != 1 {
		t.Errorf("%d order lines, want 1", got)
	}
	if got := e.countRows("stock_ledger", "sku = ? AND op = ?", "CONC-1", "DEDUCT"); got != 1 {
		t.Errorf("%d deducts, want 1", got)
	}
	if got := e.countWorkflows("WorkflowType = 'OrderWorkflow' AND OrderSKUs = 'CONC-1'", 1); got != 1 {
		t.Errorf("%d workflows, want exactly 1", got)
	}
	inv, err := e.Store.Inventory(context.Background(), "CONC-1")
	if err != nil || inv.Stock != 997 {
		t.Errorf("stock %d (%v), want 997", inv.Stock, err)
	}
}

// TestPlaceOrder_SameKeyGatedWhileTheFirstStarts: two requests with one key and body (a client's retry after a
// timeout). The first (B) has its units admitted and the key claimed; the retry (A) reads the key's row (not
// started yet), then B marks the key started and places the order, then A asks the admission gate, which
// refuses it: B's units leave none. The key's order is started, so A must answer as B does (or 409
// order-pending with Retry-After), never sold-out (docs/http-api.md, "the same key while the first request is
// still deciding"). A Redis hook orders the steps: it holds B once B is admitted and its marker set, and holds
// A's admission until B has marked the key started.
func TestPlaceOrder_SameKeyGatedWhileTheFirstStarts(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	const sku, user, key = "RACE-1", "u-race", "k-race"
	e.Stock(t, sku, 1, 100)
	body := orderBody(user, ordersaga.Line{SKU: sku, Qty: 1})
	// The server's start-up backfill of the markers is over before the race: a backfill during it could write
	// this key's marker, which would pass for B's step in the hook. With the markers ready B is gated before
	// its claim, and A, which finds the marker, after its claim.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		ready, err := e.Gate.ClaimsReady(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idempotency markers are not ready a minute after the server started")
		}
	}
	h := &sameKeyHook{
		admitting: e.Redis.AdmittingKey(sku),
		marker:    e.Redis.ClaimKey(api.OrderID(user, key, 0)),
		bHeld:     make(chan struct{}),
		releaseB:  make(chan struct{}),
	}
	h.waitStarted = func() {
		deadline := time.Now().Add(time.Minute)
		for {
			rec, err := e.Store.IdempotencyKey(context.Background(), user, key)
			if err == nil && rec.Started {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("the first request did not mark the key started within a minute: %+v %v", rec, err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	e.Redis.Client().AddHook(h)

	var b response
	var wg sync.WaitGroup
	wg.Go(func() { b = e.place(key, body) })
	select {
	case <-h.bHeld:
	case <-time.After(time.Minute):
		close(h.releaseB)
		wg.Wait()
		t.Fatalf("the first request was not held after its admission and its marker: %s", b)
	}
	a := e.place(key, body)
	wg.Wait()

	if b.status != http.StatusCreated {
		t.Fatalf("first request: %s, want 201", b)
	}
	want := b.order(t).OrderID
	t.Logf("retry: %d (Idempotent-Replayed %q)", a.status, a.header.Get("Idempotent-Replayed"))
	switch a.status {
	case http.StatusCreated:
		if got := a.order(t).OrderID; got != want {
			t.Errorf("retry answered order %s, the first %s", got, want)
		}
	case http.StatusConflict:
		p := a.wantProblem(t, http.StatusConflict, "order-pending")
		if p.OrderID != want || a.header.Get("Retry-After") == "" {
			t.Errorf("retry: %s (Retry-After %q), want order-pending for %s with Retry-After", a, a.header.Get("Retry-After"), want)
		}
	default:
		t.Errorf("retry: %s, want 201 or 409 order-pending", a)
	}
	if h.admits.Load() != 2 {
		t.Errorf("%d admissions asked, want 2 (the retry's must come after the first request's)", h.admits.Load())
	}
	if n := e.countRows("orders", "user_id = ?", user); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

// sameKeyHook orders two requests with one key (TestPlaceOrder_SameKeyGatedWhileTheFirstStarts): the first
// admission (B's) and the marker's write are B's; once both are done B is held until the second admission
// (A's) comes, which lets B go and waits for it to mark the key started before it runs.
type sameKeyHook struct {
	admitting, marker string
	waitStarted       func()
	bHeld, releaseB   chan struct{}
	admits, bSteps    atomic.Int32
}

func (h *sameKeyHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *sameKeyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *sameKeyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		admit, mark := false, false
		for _, c := range cmds {
			args := c.Args()
			switch {
			case c.Name() == "incrby" && len(args) > 1 && args[1] == h.admitting:
				admit = true
			case c.Name() == "set" && len(args) > 1 && args[1] == h.marker:
				mark = true
			}
		}
		if admit && h.admits.Add(1) == 2 {
			close(h.releaseB)
			h.waitStarted()
			return next(ctx, cmds)
		}
		err := next(ctx, cmds)
		if (admit || mark) && h.bSteps.Add(1) == 2 {
			close(h.bHeld)
			select {
			case <-h.releaseB:
			case <-time.After(time.Minute):
			}
		}
		return err
	}
}

// TestPlaceOrder_Unavailable: Temporal, Redis or the database down before anything was done is a 503 with
// Retry-After, and a retry later with the same key places the order.
func TestPlaceOrder_Unavailable(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	e.Stock(t, "UNAV-1", 10, 100)
	body := orderBody("u-down", ordersaga.Line{SKU: "UNAV-1", Qty: 1})

	downTemporal := serveAPI(t, e.Env, func(d *api.Deps) { d.Temporal = deadTemporal(t) })
	r := downTemporal.place("k-down", body)
	r.wantProblem(t, http.StatusServiceUnavailable, "unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}

	downRedis := serveAPI(t, e.Env, func(d *api.Deps) { d.Redis = deadRedis(t) })
	r = downRedis.place("k-down-redis", body)
	r.wantProblem(t, http.StatusServiceUnavailable, "unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}

	downDB := serveAPI(t, e.Env, func(d *api.Deps) { d.Store = deadStore(t) })
	r = downDB.place("k-down-db", body)
	r.wantProblem(t, http.StatusServiceUnavailable, "unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}

	// A reservation not decided in time is 409 order-pending with Retry-After; the retry gets the answer.
	impatient := serveAPI(t, e.Env, func(d *api.Deps) { d.PlaceTimeout = time.Millisecond })
	pendingBody := orderBody("u-pending", ordersaga.Line{SKU: "UNAV-1", Qty: 1})
	r = impatient.place("k-pending", pendingBody)
	p := r.wantProblem(t, http.StatusConflict, "order-pending")
	if r.header.Get("Retry-After") == "" || p.OrderID != api.OrderID("u-pending", "k-pending", 0) {
		t.Errorf("pending: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	if r = e.place("k-pending", pendingBody); r.status != http.StatusCreated || r.order(t).OrderID != p.OrderID {
		t.Errorf("retry of the pending order: %s", r)
	}
	if n := e.countRows("orders", "user_id = ?", "u-pending"); n != 1 {
		t.Errorf("%d orders after a pending answer and a retry, want 1", n)
	}

	// Nothing was placed: the retry on a healthy server is the first order of the key.
	r = e.place("k-down", body)
	if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry: %s", r)
	}
	if n := e.countRows("orders", "user_id = ?", "u-down"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}
