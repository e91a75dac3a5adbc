package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestRedisUnreachable_TheAPIServesFromTheDatabase: with Redis unreachable from the API and the worker,
// RESERVE_DB_FALLBACK on: POST /v1/orders places through the database alone with the contract's answers (201,
// the replay, 409 sold-out), GET /v1/inventory answers from the database with redis_available, holds and drift
// null, and /readyz is 200 "degraded" naming nothing but the checks. With the fallback off, POST is 503
// unavailable and /readyz 503 not-ready.
func TestRedisUnreachable_TheAPIServesFromTheDatabase(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	if err := store.SetInventory(t.Context(), "RD-API", 2, 500); err != nil {
		t.Fatal(err)
	}
	env := sagatest.StartWith(t, store, testenv.UnreachableRedis(t), func(a *activities.Activities) { a.DBFallback = true })

	off := serveAPI(t, env)
	off.place("rd-off", `{"user_id":"u-off","lines":[{"sku":"RD-API","qty":1}]}`).wantProblem(t, http.StatusServiceUnavailable, "unavailable")
	if r := off.do(http.MethodGet, "/readyz", nil, nil); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the fallback off: %s, want 503", r)
	}

	e := serveAPI(t, env, func(d *api.Deps) { d.RedisDownFallback = true })
	first := e.place("rd-1", `{"user_id":"u-1","lines":[{"sku":"RD-API","qty":2}]}`)
	if first.status != http.StatusCreated {
		t.Fatalf("POST with Redis unreachable: %s, want 201", first)
	}
	o := first.order(t)
	if o.Status != ordersaga.StatusAwaitingPayment || o.AmountCents != 1000 {
		t.Errorf("order %+v, want AWAITING_PAYMENT of 1000", o)
	}
	again := e.place("rd-1", `{"user_id":"u-1","lines":[{"sku":"RD-API","qty":2}]}`)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Errorf("replay: %s (replayed %q), want the first answer byte for byte", again, again.header.Get("Idempotent-Replayed"))
	}
	e.place("rd-2", `{"user_id":"u-2","lines":[{"sku":"RD-API","qty":1}]}`).wantProblem(t, http.StatusConflict, "sold-out")

	inv := e.do(http.MethodGet, "/v1/inventory/RD-API", nil, nil)
	if inv.status != http.StatusOK {
		t.Fatalf("GET /v1/inventory with Redis unreachable: %s, want 200", inv)
	}
	var raw map[string]any
	if err := json.Unmarshal(inv.body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"redis_available", "holds", "drift"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("inventory %s = %v (present %v), want null: %s", k, v, ok, inv.body)
		}
	}
	if raw["db_stock"] != float64(0) {
		t.Errorf("inventory db_stock = %v, want 0: %s", raw["db_stock"], inv.body)
	}

	ready := e.do(http.MethodGet, "/readyz", nil, nil)
	var body struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(ready.body, &body); err != nil {
		t.Fatal(err)
	}
	if ready.status != http.StatusOK || body.Status != "degraded" || body.Checks["redis"] != "unreachable" || body.Checks["database"] != "ok" {
		t.Errorf("/readyz with Redis unreachable and the fallback on: %s, want 200 degraded", ready)
	}
}
