package admission_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestCheckOrder: many concurrent checks share round trips and each gets its own answer — its key's marker,
// the first line Redis has too few units for, and whether the markers are ready.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	if err := rs.SetAvailable(ctx, "CK-GONE", 0); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetAvailable(ctx, "CK-SOME", 3); err != nil {
		t.Fatal(err)
	}

	c, err := g.CheckOrder(ctx, "m-0", "u", []ordersaga.Line{{SKU: "CK-GONE", Qty: 1}})
	if err != nil || c.Ready || c.Refuse() || c.SoldOutSKU != "CK-GONE" {
		t.Fatalf("before any backfill: %+v %v, want not ready (never refuse) and CK-GONE short", c, err)
	}
	token, err := g.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := g.FinishClaimsBackfill(ctx, "another"); err != nil || ok {
		t.Fatalf("finish with a token that is not current: %v %v, want not ready", ok, err)
	}
	finishBackfill(t, g, token)

	const n = 300
	var claimed []admission.ClaimMarker
	for i := 0; i < n; i += 3 {
		claimed = append(claimed, admission.ClaimMarker{Name: fmt.Sprintf("m-%d", i), Nonce: fmt.Sprintf("n-%d", i), TTL: time.Hour})
	}
	if err := g.MarkClaimed(ctx, claimed...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			lines := []ordersaga.Line{{SKU: "CK-SOME", Qty: int64(1 + i%5)}}
			if i%2 == 0 {
				lines = append(lines, ordersaga.Line{SKU: "CK-GONE", Qty: 1})
			}
			c, err := g.CheckOrder(ctx, fmt.Sprintf("m-%d", i), "u", lines)
			if err != nil {
				t.Errorf("check %d: %v", i, err)
				return
			}
			want := ""
			switch {
			case 1+i%5 > 3:
				want = "CK-SOME"
			case i%2 == 0:
				want = "CK-GONE"
			}
			if !c.Ready || c.Claimed != (i%3 == 0) || c.SoldOutSKU != want {
				t.Errorf("check %d: %+v, want ready, claimed %v, sold out %q", i, c, i%3 == 0, want)
			}
			if c.Refuse() != (want != "" && i%3 != 0) {
				t.Errorf("check %d: refuse %v", i, c.Refuse())
			}
		})
	}
	wg.Wait()
}

// TestAdmit: the gate never counts more units being placed than Redis has left, a refused multi-line order
// undoes its admitted lines, and Done frees the units.
func TestAdmit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	if err := rs.SetAvailable(ctx, "AD-1", 10); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetAvailable(ctx, "AD-2", 1); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		admitted []*admission.Admission
		refused  int
		wg       sync.WaitGroup
	)
	for range 100 {
		wg.Go(func() {
			a, sku, err := g.AdmitNow(ctx, []ordersaga.Line{{SKU: "AD-1", Qty: 1}}, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case sku == "AD-1":
				refused++
			default:
				admitted = append(admitted, a)
			}
		})
	}
	wg.Wait()
	if len(admitted) != 10 || refused != 90 {
		t.Fatalf("admitted %d, refused %d; want 10 and 90", len(admitted), refused)
	}
	if n, err := g.Admitting(ctx, "AD-1"); err != nil || n != 10 {
		t.Fatalf("admitting %d %v, want 10", n, err)
	}
	admitted[0].Done(ctx)
	admitted[0].Done(ctx) // twice: counted once
	if n, _ := g.Admitting(ctx, "AD-1"); n != 9 {
		t.Fatalf("admitting after one Done: %d, want 9", n)
	}

	// AD-1 has one unit free, AD-2 one unit; an order of both with 2 of AD-2 is refused on AD-2 and takes
	// nothing of AD-1.
	a, sku, err := g.AdmitNow(ctx, []ordersaga.Line{{SKU: "AD-1", Qty: 1}, {SKU: "AD-2", Qty: 2}}, time.Minute)
	if err != nil || sku != "AD-2" || a != nil {
		t.Fatalf("order over AD-2: %v %q %v, want refused on AD-2", a, sku, err)
	}
	if n, _ := g.Admitting(ctx, "AD-1"); n != 9 {
		t.Fatalf("admitting of AD-1 after a refused order: %d, want 9", n)
	}
	// A SKU Redis has not loaded is admitted and not counted (the workflow fails closed).
	if a, sku, err := g.AdmitNow(ctx, []ordersaga.Line{{SKU: "AD-NOT-LOADED", Qty: 5}}, time.Minute); err != nil || sku != "" || a == nil {
		t.Fatalf("not loaded: %v %q %v", a, sku, err)
	}
	if n, _ := g.Admitting(ctx, "AD-NOT-LOADED"); n != 0 {
		t.Fatalf("a SKU not loaded was counted: %d", n)
	}
	for _, a := range admitted[1:] {
		a.Done(ctx)
	}
	if n, _ := g.Admitting(ctx, "AD-1"); n != 0 {
		t.Fatalf("admitting after every Done: %d, want 0", n)
	}
}

// finishBackfill finishes the markers' backfill begun with token; it must set them ready.
func finishBackfill(t *testing.T, g *admission.Gate, token string) {
	t.Helper()
	if ok, err := g.FinishClaimsBackfill(context.Background(), token); err != nil || !ok {
		t.Fatalf("finish backfill: %v %v, want ready", ok, err)
	}
}

// TestCheckOrderCommandErrors: an error of any command of the shared round trip is an error of the check,
// also when an earlier command of the pipeline found its key absent (redis.Nil, which go-redis reports as
// the pipeline's error): a key of the wrong type must not read as "no limit" or "no stock".
func TestCheckOrderCommandErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	token, err := g.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	finishBackfill(t, g, token)
	for _, tc := range []struct {
		name  string
		wrong func(sku string) string // the key set to a hash where the check reads a string
	}{
		{"limit_of_the_wrong_type", rs.LimitKey},
		{"available_of_the_wrong_type", rs.AvailKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sku := "CE-" + tc.name
			if err := rs.SetAvailable(ctx, sku, 5); err != nil {
				t.Fatal(err)
			}
			key := tc.wrong(sku)
			if err := rs.Client().Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rs.Client().HSet(ctx, key, "f", 1).Err(); err != nil {
				t.Fatal(err)
			}
			// The first line is not loaded: its GET answers redis.Nil ahead of the failing command.
			lines := []ordersaga.Line{{SKU: "CE-NOT-LOADED", Qty: 1}, {SKU: sku, Qty: 1}}
			if c, err := g.CheckOrder(ctx, "m-"+tc.name, "u", lines); err == nil {
				t.Fatalf("check with %s of the wrong type: %+v and no error, want an error", key, c)
			}
		})
	}
}
