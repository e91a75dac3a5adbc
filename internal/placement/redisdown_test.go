package placement_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// fallbackOn is the configuration of an API process with RESERVE_DB_FALLBACK on (the default).
func fallbackOn(c *placement.Config) { c.RedisDownFallback = true }

// TestPlace_RedisUnreachable_PlacesThroughTheDatabase: with Redis unreachable from the API and the worker and
// the fallback on, orders are placed through the database alone with the answers of the contract: as many
// reserved as the database holds, the rest sold out, a retry replays its first answer, nothing is oversold;
// and the markers' fence is up (keys without their marker). With the fallback off the same request is
// Unavailable, naming Redis, and claims nothing.
func TestPlace_RedisUnreachable_PlacesThroughTheDatabase(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	const sku = "RDOWN-1"
	se := sagatest.StartWith(t, store, testenv.UnreachableRedis(t), func(a *activities.Activities) { a.DBFallback = true })
	if err := store.SetInventory(t.Context(), sku, 3, 250); err != nil {
		t.Fatal(err)
	}
	off := serviceOn(t, se)
	if out := want(t, off.place("k-off", "u-off", ordersaga.Line{SKU: sku, Qty: 1}), placement.Unavailable); out.Service != "redis" {
		t.Errorf("fallback off: %+v, want redis unavailable", out)
	}
	off.noKey(t, "u-off", "k-off", "fallback off")

	e := serviceOn(t, se, fallbackOn)
	const n = 10
	outs := make([]placement.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outs[i] = e.place(fmt.Sprintf("k-%d", i), fmt.Sprintf("u-%d", i), ordersaga.Line{SKU: sku, Qty: 1})
		})
	}
	wg.Wait()
	var reserved []int
	for i, out := range outs {
		switch out.Kind {
		case placement.Reserved:
			reserved = append(reserved, i)
			if out.Order.Status != ordersaga.StatusAwaitingPayment || out.Order.AmountCents != 250 {
				t.Errorf("order %d: %+v, want AWAITING_PAYMENT of 250", i, out.Order)
			}
		case placement.SoldOut:
			if out.SKU != sku {
				t.Errorf("order %d: sold out naming %q, want %s", i, out.SKU, sku)
			}
		default:
			t.Errorf("order %d: %s %+v, want reserved or sold out", i, out.Kind, out)
		}
	}
	if len(reserved) != 3 {
		t.Fatalf("%d of %d orders reserved on a stock of 3 through the database alone, want 3", len(reserved), n)
	}
	if inv, err := store.Inventory(t.Context(), sku); err != nil || inv.Stock != 0 {
		t.Errorf("db stock %d (%v), want 0", inv.Stock, err)
	}
	// A retry answers as the first.
	first := reserved[0]
	again := want(t, e.place(fmt.Sprintf("k-%d", first), fmt.Sprintf("u-%d", first), ordersaga.Line{SKU: sku, Qty: 1}), placement.Replayed)
	if again.OrderID != outs[first].OrderID {
		t.Errorf("retry of order %d: %s, want %s", first, again.OrderID, outs[first].OrderID)
	}
	f, err := store.ReadMarkerFence(t.Context())
	if err != nil || !f.Active {
		t.Errorf("marker fence %+v (%v), want up: keys were claimed without their markers", f, err)
	}
	t.Logf("redis unreachable, fallback on: %d orders on a stock of 3 -> %d reserved, %d sold out; db=%s",
		n, len(reserved), n-len(reserved), store.Dialect())
}

// TestPlace_KeyClaimedWithoutRedisIsNeverAnsweredFromTheFastPath: API process A cannot reach Redis (a
// partition) and places an order through the database alone; its key has no marker. Process B reaches Redis,
// where the SKU is sold out (the order's own hold). A retry of the order's key at B must replay its answer,
// never "sold out" from the fast path or "gated" from the admission gate: the markers' fence keeps B off them.
// Once B has re-marked the keys it lowers the fence, and the fast path answers again without a claim.
func TestPlace_KeyClaimedWithoutRedisIsNeverAnsweredFromTheFastPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fallbackOn) // B: the worker and B reach Redis
	const sku = "RDOWN-2"
	e.Stock(t, sku, 1, 100)
	a := serviceOn(t, e.Env, fallbackOn, func(c *placement.Config) { c.Stock = admission.New(testenv.UnreachableRedis(t)) })

	line := ordersaga.Line{SKU: sku, Qty: 1}
	first := want(t, a.place("k-part", "u-part", line), placement.Reserved)
	if avail, _, err := e.Redis.Available(t.Context(), sku); err != nil || avail != 0 {
		t.Fatalf("redis available %d (%v) after the order, want 0", avail, err)
	}
	again := e.place("k-part", "u-part", line)
	if again.Kind != placement.Replayed || again.OrderID != first.OrderID {
		t.Fatalf("retry at B of the order placed at A without Redis: %s %+v, want replayed %s", again.Kind, again, first.OrderID)
	}

	// B lowers the fence in the background once it has marked every key; then a new key is refused from the
	// fast path (no row claimed) and the placed key is still replayed.
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := e.Store.ReadMarkerFence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !f.Active {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fence is still up a minute after Redis answered B: %+v", f)
		}
		e.place(fmt.Sprintf("k-poke-%d", time.Now().UnixNano()), "u-poke", line) // a placement starts the lowering
		time.Sleep(100 * time.Millisecond)
	}
	// B's copy of the fence may still say up (a read that began before the lowering), for at most about a
	// second: until B reads it again, a new key is answered by the workflow after a claim. New keys until one
	// is answered from the fast path, which must claim nothing.
	deadline = time.Now().Add(30 * time.Second)
	down := time.Now()
	for i := 0; ; i++ {
		key := fmt.Sprintf("k-new-%d", i)
		out := want(t, e.place(key, "u-new", line), placement.SoldOut)
		if out.FastPath {
			e.noKey(t, "u-new", key, "sold out from the fast path once the fence is down")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fence is down, and 30s later B still answers sold out from the workflow, not the fast path")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("B answered from the fast path %v after the fence was down", time.Since(down).Round(time.Millisecond))
	if r := e.place("k-part", "u-part", line); r.Kind != placement.Replayed || r.OrderID != first.OrderID {
		t.Errorf("retry after the fence is down: %s %+v, want replayed %s", r.Kind, r, first.OrderID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := e.Redis.Client().Exists(ctx, e.Redis.ClaimKey(placement.MarkerName("u-part", "k-part"))).Result(); err != nil || n != 1 {
		t.Errorf("marker of the key claimed without Redis: %d (%v), want written by the re-marking", n, err)
	}
}
