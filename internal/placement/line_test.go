package placement_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/placement"
)

// TestPlace_FirstComeFirstPlaced: twenty buyers arrive 30 ms apart while the SKU's five units are all being
// placed by another request; each keeps coming back with its key as an answer in line says. When the units
// come back, the five who arrived first are placed and the fifteen others told sold out: no later buyer
// overtakes an earlier one, whoever asks first once the units free.
func TestPlace_FirstComeFirstPlaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *placement.Config) { c.LineHold = 300 * time.Millisecond })
	waitReady(t, e)
	const sku, units, buyers = "FAIR-1", 5, 20
	e.Stock(t, sku, units, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	holder := e.admitOther(t, ordersaga.Line{SKU: sku, Qty: units})

	outs := make([]placement.Outcome, buyers)
	inLine := make(chan int, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		time.Sleep(30 * time.Millisecond)
		wg.Go(func() {
			key, user := fmt.Sprintf("k-fair-%02d", i), fmt.Sprintf("u-fair-%02d", i)
			for first := true; ; first = false {
				out := e.place(key, user, line)
				if out.Kind != placement.InLine {
					outs[i] = out
					return
				}
				if first {
					inLine <- i
				}
				// Back sooner than Retry-After asks, in a different rhythm per buyer: whoever asks first
				// when the units free must not matter.
				time.Sleep(time.Duration(20+7*i%50) * time.Millisecond)
			}
		})
	}
	for range buyers {
		select {
		case <-inLine:
		case <-time.After(time.Minute):
			t.Fatal("not every buyer was answered in line within a minute")
		}
	}
	holder.Done(context.Background()) // the other request's units come back (its order rejected)
	wg.Wait()
	for i, out := range outs {
		wantKind := placement.SoldOut
		if i < units {
			wantKind = placement.Reserved
		}
		if out.Kind != wantKind {
			t.Errorf("buyer %d (arrival order): %s, want %s", i, out.Kind, wantKind)
		}
	}
	if n := e.countRows("orders", "user_id LIKE ?", "u-fair-%"); n != units {
		t.Errorf("%d orders, want %d", n, units)
	}
}
