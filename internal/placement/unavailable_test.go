package placement_test

import (
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestPlace_Unavailable: Temporal, Redis or the database down before anything was done is Unavailable naming
// it, and a retry later with the same key places the order; a reservation not decided in time is Pending.
func TestPlace_Unavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Stock(t, "UNAV-1", 10, 100)
	line := ordersaga.Line{SKU: "UNAV-1", Qty: 1}

	for _, c := range []struct {
		service, key string
		change       func(*placement.Config)
	}{
		{"temporal", "k-down", func(c *placement.Config) { c.Temporal = sagatest.DeadTemporal(t) }},
		{"redis", "k-down-redis", func(c *placement.Config) { c.Stock = admission.New(testenv.UnreachableRedis(t)) }},
		{"database", "k-down-db", func(c *placement.Config) { c.Store = testenv.DeadStore(t) }},
	} {
		down := serviceOn(t, e.Env, c.change)
		if out := want(t, down.place(c.key, "u-down", line), placement.Unavailable); out.Service != c.service || out.Err == nil {
			t.Errorf("%s down: %+v, want %s unavailable with its error", c.service, out, c.service)
		}
	}

	// A reservation not decided in time is Pending, naming the order; the retry gets the answer.
	impatient := serviceOn(t, e.Env, func(c *placement.Config) { c.PlaceTimeout = time.Millisecond })
	pendingLine := ordersaga.Line{SKU: "UNAV-1", Qty: 1}
	p := want(t, impatient.place("k-pending", "u-pending", pendingLine), placement.Pending)
	if p.OrderID != e.KeyOrderID(t, "u-pending", "k-pending") {
		t.Errorf("pending: %+v, want the key's order", p)
	}
	if r := want(t, e.place("k-pending", "u-pending", pendingLine), placement.Reserved); r.OrderID != p.OrderID {
		t.Errorf("retry of the pending order: %s, want %s", r.OrderID, p.OrderID)
	}
	if n := e.countRows("orders", "user_id = ?", "u-pending"); n != 1 {
		t.Errorf("%d orders after a pending answer and a retry, want 1", n)
	}

	// Nothing was placed: the retry on a healthy service is the first order of the key.
	want(t, e.place("k-down", "u-down", line), placement.Reserved)
	if n := e.countRows("orders", "user_id = ?", "u-down"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}
