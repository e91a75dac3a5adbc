package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestPlaceOrder_KeyExpiresAfterTheRetention: POST /v1/orders with one Idempotency-Key replays (201 again,
// Idempotent-Replayed) and refuses another body (422) within IDEMPOTENCY_RETENTION after its last answer; once
// unused for longer, its order closed, the same key is a new order (201, not replayed) with a new order ID, and
// another body is accepted too.
func TestPlaceOrder_KeyExpiresAfterTheRetention(t *testing.T) {
	t.Parallel()
	const retention = 3 * time.Second
	env := sagatest.Start(t)
	clk := testenv.NewClock()
	env.Store.SetClock(clk.Now) // before the server's backfill reads it
	e := serveAPI(t, env, func(d *api.Deps) { d.Retention = retention })
	e.Stock(t, "RET-API", 100, 250)
	body := orderBody("u-ret", ordersaga.Line{SKU: "RET-API", Qty: 1})
	other := orderBody("u-ret", ordersaga.Line{SKU: "RET-API", Qty: 2})

	first := e.place("k-ret-api", body)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %s, want 201", first)
	}
	id1 := first.order(t).OrderID
	clk.Advance(retention / 2)
	if r := e.place("k-ret-api", body); r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "true" || string(r.body) != string(first.body) {
		t.Errorf("within the retention: %s (replayed %q), want the first answer replayed", r, r.header.Get("Idempotent-Replayed"))
	}
	e.place("k-ret-api", other).wantProblem(t, http.StatusUnprocessableEntity, "idempotency-key-reused")

	e.cancelRecorded(id1) // a key is kept while its order is open
	clk.Advance(retention + time.Second)
	second := e.place("k-ret-api", body)
	if second.status != http.StatusCreated || second.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after the retention: %s (replayed %q), want a new 201", second, second.header.Get("Idempotent-Replayed"))
	}
	id2 := second.order(t).OrderID
	if id2 == id1 {
		t.Errorf("the key's new order reused order ID %s", id1)
	}
	if loc := second.header.Get("Location"); loc != "/v1/orders/"+id2 {
		t.Errorf("Location %q, want the new order's", loc)
	}

	e.cancelRecorded(id2)
	clk.Advance(retention + time.Second)
	third := e.place("k-ret-api", other)
	if third.status != http.StatusCreated {
		t.Fatalf("another body after the retention: %s, want 201 (not 422)", third)
	}
	if id3 := third.order(t).OrderID; id3 == id1 || id3 == id2 {
		t.Errorf("the key's third order reused order ID %s", id3)
	}
	if n := e.countRows("orders", "user_id = ?", "u-ret"); n != 3 {
		t.Errorf("%d orders, want 3", n)
	}
}

// cancelRecorded cancels an order through the API and waits until the database records it cancelled.
func (e *apiEnv) cancelRecorded(orderID string) {
	e.t.Helper()
	if c := e.do(http.MethodPost, "/v1/orders/"+orderID+"/cancel", nil, nil); c.status != http.StatusOK {
		e.t.Fatalf("cancel %s: %s", orderID, c)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if o, err := e.Store.Order(context.Background(), orderID); err == nil && o.Status == ordersaga.StatusCancelled {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("order %s not recorded cancelled a minute after its cancel", orderID)
		}
	}
}
