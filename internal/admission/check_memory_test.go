package admission_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// hvalsCounter counts the HVALS commands a client sends, alone or in pipelines.
type hvalsCounter struct{ n atomic.Int64 }

func (h *hvalsCounter) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if strings.EqualFold(c.Name(), "hvals") {
			h.n.Add(1)
		}
	}
}

func (h *hvalsCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hvalsCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}

func (h *hvalsCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// TestCheckOrderReadsUnitsOnlyWhenNeeded: once a trip has seen a SKU sold out, or without a per-user limit,
// the checks of its lines leave out the user's units (HVALS), and every answer is still the one the state of
// Redis gives: when the SKU comes back in stock with a limit, or gets a limit, a buyer at the limit is
// refused for the limit on the very next check, not let through or answered from the stale memory.
func TestCheckOrderReadsUnitsOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	hv := &hvalsCounter{}
	rs.Client().AddHook(hv)
	g := admission.New(rs)
	token, err := g.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	finishBackfill(t, g, token)
	sku := "CM-" + testenv.RandomID(4)
	if err := rs.SetAvailable(ctx, sku, 0); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetLimit(ctx, sku, 2); err != nil {
		t.Fatal(err)
	}
	// The buyer holds 2 units of the SKU: at the limit.
	if err := rs.Client().HSet(ctx, rs.UserKey(sku, "buyer"), "o-earlier", 2).Err(); err != nil {
		t.Fatal(err)
	}
	line := []ordersaga.Line{{SKU: sku, Qty: 1}}
	check := func(step string) (admission.FastCheck, int64) {
		t.Helper()
		before := hv.n.Load()
		c, err := g.CheckOrder(ctx, "m-"+step, "buyer", line)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return c, hv.n.Load() - before
	}

	// First sight of the SKU: the units are read.
	if c, n := check("first"); c.SoldOutSKU != sku || n != 1 {
		t.Fatalf("first check of a sold-out SKU: %+v with %d HVALS, want sold out with 1 (the SKU not seen yet)", c, n)
	}
	// Seen sold out: left out.
	for i := range 3 {
		if c, n := check("sold-out"); c.SoldOutSKU != sku || !c.Refuse() || n != 0 {
			t.Fatalf("check %d of a SKU seen sold out: %+v with %d HVALS, want sold out with none", i, c, n)
		}
	}
	// Back in stock: the check that finds it so must answer the limit, from a trip that read the units.
	if err := rs.SetAvailable(ctx, sku, 10); err != nil {
		t.Fatal(err)
	}
	c, n := check("restocked")
	if c.SoldOutSKU != "" || c.Limit == nil || c.Limit.Held != 2 || c.Limit.Limit != 2 || !c.Refuse() {
		t.Fatalf("first check after the restock: %+v, want refused for the limit (held 2 of 2)", c)
	}
	if n != 1 {
		t.Fatalf("first check after the restock sent %d HVALS, want 1 (the second trip's)", n)
	}
	if c, n := check("in-stock"); c.Limit == nil || n != 1 {
		t.Fatalf("check of a SKU seen in stock with a limit: %+v with %d HVALS, want the limit from 1", c, n)
	}

	// No limit: left out once seen, and a limit set later is enforced on the next check.
	if err := rs.SetLimit(ctx, sku, 0); err != nil {
		t.Fatal(err)
	}
	if c, n := check("limit-dropped"); c.Limit != nil || c.Refuse() || n != 1 {
		t.Fatalf("first check without a limit: %+v with %d HVALS, want no refusal from 1 (read before the trip saw the limit gone)", c, n)
	}
	if c, n := check("no-limit"); c.Limit != nil || c.Refuse() || n != 0 {
		t.Fatalf("check of a SKU seen without a limit: %+v with %d HVALS, want no refusal with none", c, n)
	}
	if err := rs.SetLimit(ctx, sku, 2); err != nil {
		t.Fatal(err)
	}
	if c, n := check("limit-set"); c.Limit == nil || !c.Refuse() || n != 1 {
		t.Fatalf("first check after a limit was set: %+v with %d HVALS, want refused for the limit from the second trip's 1", c, n)
	}

	// A SKU Redis does not have is never remembered.
	gone := []ordersaga.Line{{SKU: "CM-NOT-LOADED-" + testenv.RandomID(4), Qty: 1}}
	for i := range 2 {
		before := hv.n.Load()
		c, err := g.CheckOrder(ctx, "m-gone", "buyer", gone)
		if err != nil || c.Refuse() || hv.n.Load()-before != 1 {
			t.Fatalf("check %d of a SKU not loaded: %+v %v with %d HVALS, want no refusal and 1", i, c, err, hv.n.Load()-before)
		}
	}
}
