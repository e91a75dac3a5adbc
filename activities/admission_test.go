package activities_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestCheckOrder: many concurrent checks share round trips and each gets its own answer — its key's marker,
// the first line Redis has too few units for, and whether the markers are ready.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rs := testenv.MustOpenRedis(t)
	if err := rs.SetAvailable(ctx, "CK-GONE", 0); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetAvailable(ctx, "CK-SOME", 3); err != nil {
		t.Fatal(err)
	}

	c, err := rs.CheckOrder(ctx, "m-0", []ordersaga.Line{{SKU: "CK-GONE", Qty: 1}})
	if err != nil || c.Ready || c.Refuse() || c.SoldOutSKU != "CK-GONE" {
		t.Fatalf("before any backfill: %+v %v, want not ready (never refuse) and CK-GONE short", c, err)
	}
	token, err := rs.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := rs.FinishClaimsBackfill(ctx, "another"); err != nil || ok {
		t.Fatalf("finish with a token that is not current: %v %v, want not ready", ok, err)
	}
	if ok, err := rs.FinishClaimsBackfill(ctx, token); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}

	const n = 300
	var claimed []string
	for i := 0; i < n; i += 3 {
		claimed = append(claimed, fmt.Sprintf("m-%d", i))
	}
	if err := rs.MarkClaimed(ctx, claimed...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			lines := []ordersaga.Line{{SKU: "CK-SOME", Qty: int64(1 + i%5)}}
			if i%2 == 0 {
				lines = append(lines, ordersaga.Line{SKU: "CK-GONE", Qty: 1})
			}
			c, err := rs.CheckOrder(ctx, fmt.Sprintf("m-%d", i), lines)
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
