package placement_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
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

// TestPlace_AUnitBackAfterSoldOutGoesToTheOldestTicket: a buyer waits in line while the SKU's last unit is
// being placed; that placement reserves it (the counter is 0, and a newcomer is told sold out by the fast
// path), then the unit comes back (the order cancelled) before the buyer's next try. A newcomer then waits
// behind the buyer's ticket, and the buyer gets the unit: a sold-out moment does not cost a live ticket its
// place.
func TestPlace_AUnitBackAfterSoldOutGoesToTheOldestTicket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *placement.Config) { c.LineHold = 100 * time.Millisecond })
	waitReady(t, e)
	ctx := context.Background()
	const sku = "BACK-1"
	e.Stock(t, sku, 1, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	holder := e.admitOther(t, line)
	want(t, e.place("k-back-early", "u-back-early", line), placement.InLine)
	if _, err := e.Redis.Reserve(ctx, "o-back-other", "u-back-other", sku, 1); err != nil {
		t.Fatal(err)
	}
	holder.Done(ctx)
	want(t, e.place("k-back-sold", "u-back-sold", line), placement.SoldOut)
	if _, err := e.Redis.Release(ctx, "o-back-other", "u-back-other", sku); err != nil {
		t.Fatal(err)
	}
	if out := e.place("k-back-late", "u-back-late", line); out.Kind != placement.InLine || out.Position != 1 {
		t.Errorf("a newcomer once the unit came back: %s at %d, want in line behind the earlier buyer", out.Kind, out.Position)
	}
	want(t, e.place("k-back-early", "u-back-early", line), placement.Reserved)
}

// TestPlace_OnlyTheFrontWaitsInTheServer: while the SKU's units are all being placed, twenty buyers take
// tickets; the sixteen nearest the front wait in the server for their turn (Config.LineHold, the units never
// free here), and the others are answered in line at once although they too are due back within a second:
// every request held asks the line again every 200 ms, and holding the whole line made a herd of calls.
func TestPlace_OnlyTheFrontWaitsInTheServer(t *testing.T) {
	t.Parallel()
	const hold = 6 * time.Second
	e := newEnv(t, func(c *placement.Config) { c.LineHold = hold })
	waitReady(t, e)
	const sku, buyers = "HOLD-1", 20
	e.Stock(t, sku, 5, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	holder := e.admitOther(t, ordersaga.Line{SKU: sku, Qty: 5})
	defer holder.Done(context.Background())

	type answer struct {
		out  placement.Outcome
		took time.Duration
	}
	answers := make([]answer, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		time.Sleep(20 * time.Millisecond) // tickets in this order
		wg.Go(func() {
			start := time.Now()
			out := e.place(fmt.Sprintf("k-hold-%02d", i), fmt.Sprintf("u-hold-%02d", i), line)
			answers[i] = answer{out, time.Since(start)}
		})
	}
	wg.Wait()
	// A buyer's place is its position when answered: under load a request sent later may take its ticket
	// first, so positions need not follow the buyers' order.
	held := 0
	for i, a := range answers {
		if a.out.Kind != placement.InLine || a.out.RetryAfter != time.Second {
			t.Errorf("buyer %d: %s at %d, Retry-After %v; want in line, due back within a second", i, a.out.Kind, a.out.Position, a.out.RetryAfter)
			continue
		}
		if a.took >= hold {
			held++
		}
		if front := a.out.Position < 16; (a.took >= hold) != front {
			t.Errorf("buyer %d at position %d answered after %v: held in the server %v, want %v", i, a.out.Position, a.took.Round(time.Millisecond), a.took >= hold, front)
		}
	}
	if held != 16 {
		t.Errorf("%d buyers held in the server, want the 16 at the front", held)
	}
}

// TestPlace_TheNextInLineWaitsWhateverThePace: the line has admitted one order in 2.5 s (a slow machine, a
// slow stack), so the next in line is told to come back in 2 s; it still waits in the server for its turn
// and is placed when the unit frees, instead of being sent away with a ticket at the front. (On CI's race
// pass the line's measured pace sent the next in line away: TestPlace_InLineWaitsInTheServerForItsTurn.)
func TestPlace_TheNextInLineWaitsWhateverThePace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *placement.Config) { c.LineHold = 5 * time.Second })
	waitReady(t, e)
	const sku = "SLOW-1"
	e.Stock(t, sku, 3, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	holder := e.admitOther(t, ordersaga.Line{SKU: sku, Qty: 2})
	time.Sleep(2500 * time.Millisecond)
	holder.Done(context.Background())
	want(t, e.place("k-slow-a", "u-slow-a", line), placement.Reserved) // the line's pace: 1 in 2.5 s
	holder = e.admitOther(t, ordersaga.Line{SKU: sku, Qty: 2})         // the 2 units left being placed

	next := make(chan placement.Outcome, 1)
	go func() { next <- e.place("k-slow-b", "u-slow-b", line) }()
	select {
	case out := <-next:
		t.Fatalf("the next in line was answered %s at %d (Retry-After %v) at once, want it to wait for its turn", out.Kind, out.Position, out.RetryAfter)
	case <-time.After(500 * time.Millisecond):
	}
	holder.Done(context.Background())
	want(t, <-next, placement.Reserved)
}

// claimFailsOnce is the database failing one claim of an idempotency key (armed: the next one).
type claimFailsOnce struct {
	placement.Store
	armed atomic.Bool
}

func (s *claimFailsOnce) ClaimIdempotencyKey(ctx context.Context, c sqlstore.IdempotencyClaim, retention time.Duration) (sqlstore.IdempotencyRecord, bool, error) {
	if s.armed.CompareAndSwap(true, false) {
		return sqlstore.IdempotencyRecord{}, false, errors.New("the database went away")
	}
	return s.Store.ClaimIdempotencyKey(ctx, c, retention)
}

// TestPlace_AdmittedThenUnavailableKeepsItsPlace: the first in line is admitted when the unit frees, and the
// database fails its key's claim, so it is answered to come back (503 unavailable, nothing placed). A buyer
// who arrived later and asks meanwhile waits behind it, and the first buyer's retry gets the unit: a store's
// hiccup does not send a buyer to the back of the line.
func TestPlace_AdmittedThenUnavailableKeepsItsPlace(t *testing.T) {
	t.Parallel()
	var store *claimFailsOnce
	e := newEnv(t, func(c *placement.Config) {
		c.LineHold = 100 * time.Millisecond
		store = &claimFailsOnce{Store: c.Store}
		c.Store = store
	})
	waitReady(t, e)
	const sku = "AGAIN-1"
	e.Stock(t, sku, 1, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	holder := e.admitOther(t, line)
	want(t, e.place("k-again-first", "u-again-first", line), placement.InLine)
	want(t, e.place("k-again-later", "u-again-later", line), placement.InLine)
	holder.Done(context.Background()) // the unit comes back (the other placement's order rejected)

	store.armed.Store(true)
	if out := want(t, e.place("k-again-first", "u-again-first", line), placement.Unavailable); out.Service != "database" {
		t.Fatalf("the first buyer's claim failing: %+v, want the database unavailable", out)
	}
	if out := e.place("k-again-later", "u-again-later", line); out.Kind != placement.InLine || out.Position != 1 {
		t.Fatalf("the later buyer after the first one's failure: %s at %d, want in line behind it", out.Kind, out.Position)
	}
	want(t, e.place("k-again-first", "u-again-first", line), placement.Reserved)
	want(t, e.place("k-again-later", "u-again-later", line), placement.SoldOut)
}
