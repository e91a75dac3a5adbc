package admission_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// lineEnv is a gate on a Redis of the test's own (a cluster when REDIS_CLUSTER=1) and a SKU with stock.
type lineEnv struct {
	t   *testing.T
	rs  *redisstock.Store
	g   *admission.Gate
	sku string
}

func newLine(t *testing.T, stock int64, rules admission.LineRules) *lineEnv {
	t.Helper()
	rs := testenv.MustOpenRedis(t)
	g := admission.New(rs)
	t.Cleanup(g.Kill)
	g.SetLineRules(rules)
	e := &lineEnv{t: t, rs: rs, g: g, sku: "LINE-" + testenv.RandomID(4)}
	if err := rs.SetAvailable(context.Background(), e.sku, stock); err != nil {
		t.Fatal(err)
	}
	return e
}

// ask is one call of the request holding ticket id (first arrival at), for qty units of the SKU.
func (e *lineEnv) ask(id string, at time.Time, qty int64) (*admission.Admission, admission.Turn) {
	e.t.Helper()
	a, turn, err := e.g.Admit(context.Background(), admission.Ticket{ID: id, Arrived: at}, []ordersaga.Line{{SKU: e.sku, Qty: qty}}, nil, time.Minute)
	if err != nil {
		e.t.Fatalf("admit %s: %v", id, err)
	}
	return a, turn
}

func (e *lineEnv) wantInLine(id string, at time.Time, position int64) admission.Turn {
	e.t.Helper()
	a, turn := e.ask(id, at, 1)
	if a != nil || turn.SoldOut || turn.SKU != e.sku || turn.Position != position {
		e.t.Fatalf("%s: admitted %v, turn %+v; want in line at %d", id, a != nil, turn, position)
	}
	return turn
}

func (e *lineEnv) wantAdmitted(id string, at time.Time) *admission.Admission {
	e.t.Helper()
	a, turn := e.ask(id, at, 1)
	if a == nil {
		e.t.Fatalf("%s: not admitted: %+v", id, turn)
	}
	return a
}

// TestLine_FirstComeFirstAdmitted: while the SKU's last unit is being placed, two requests take tickets in
// the order they arrived; when the unit frees, the later one asking first is not admitted (the earlier one is
// live ahead of it), the earlier one is, and the later one is then first in line. A retry keeps its ticket
// and its first arrival whatever arrival it brings (another process's clock, a later attempt).
func TestLine_FirstComeFirstAdmitted(t *testing.T) {
	t.Parallel()
	e := newLine(t, 1, admission.LineRules{})
	holder := e.wantAdmitted("", time.Now())
	t0 := time.Now()
	e.wantInLine("early", t0, 0)
	e.wantInLine("late", t0.Add(10*time.Millisecond), 1)
	e.wantInLine("early", t0.Add(time.Second), 0) // the retry brings a later arrival: it keeps its own

	holder.Done(context.Background())
	turn := e.wantInLine("late", t0.Add(10*time.Millisecond), 1)
	if turn.RetryAfter != time.Second || turn.Length != 2 {
		t.Errorf("the later ticket's turn %+v: want Retry-After 1s and a line of 2", turn)
	}
	before := time.Since(t0)
	a, turn := e.ask("early", t0.Add(time.Second), 1) // a retry on a process whose clock is a second ahead
	if a == nil {
		t.Fatalf("the earlier ticket once the unit freed: not admitted (%+v)", turn)
	}
	if turn.Waited < before-time.Millisecond || turn.Waited > time.Since(t0)+time.Millisecond {
		t.Errorf("the earlier ticket waited %v, want %v..%v: from its first arrival, not the retry's", turn.Waited, before, time.Since(t0))
	}
	e.wantInLine("late", t0.Add(10*time.Millisecond), 0)
	if ids, err := e.g.Line(context.Background(), e.sku); err != nil || len(ids) != 1 || ids[0] != "late" {
		t.Errorf("the line is %v (%v), want [late]", ids, err)
	}
	// A request without a ticket never jumps a live one.
	a.Done(context.Background())
	if a, turn := e.ask("", time.Now(), 1); a != nil || turn.Position != 1 {
		t.Errorf("a request without a ticket behind a live one: admitted %v (%+v), want refused", a != nil, turn)
	}
	e.wantAdmitted("late", t0)
}

// TestLine_AbandonedTicketLosesItsPlace: a holder not back by its Retry-After plus the grace loses its
// ticket, and the unit it waited for goes to the next live ticket; a holder back in time keeps its place.
func TestLine_AbandonedTicketLosesItsPlace(t *testing.T) {
	t.Parallel()
	e := newLine(t, 1, admission.LineRules{Grace: 200 * time.Millisecond})
	holder := e.wantAdmitted("", time.Now())
	t0 := time.Now()
	first := e.wantInLine("gone", t0, 0)
	e.wantInLine("kept", t0.Add(time.Millisecond), 1)
	e.wantInLine("back", t0.Add(2*time.Millisecond), 2)
	// "kept" and "back" come back in time (every 500 ms); "gone" never does.
	deadline := time.Now().Add(first.RetryAfter + 200*time.Millisecond + 300*time.Millisecond)
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		e.ask("kept", t0, 1)
		e.ask("back", t0, 1)
	}
	holder.Done(context.Background())
	a, turn := e.ask("back", t0, 1)
	if a != nil || turn.Position != 1 {
		t.Fatalf("the third ticket after the first was abandoned: admitted %v (%+v), want in line behind the second", a != nil, turn)
	}
	a, turn = e.ask("kept", t0, 1)
	if a == nil {
		t.Fatalf("the second ticket, back in time, after the first was abandoned: not admitted (%+v)", turn)
	}
	// The abandoned holder comes back at last: a new ticket, from this arrival, at the back.
	e.wantInLine("gone", time.Now(), 1)
}

// TestLine_KnowsTheStock: units only being placed are no sold out (in line); fewer units left than asked is,
// at once, and the ticket leaves the line. PerSKU bounds the units being placed at once, except for the
// first in line when nothing is.
func TestLine_KnowsTheStock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newLine(t, 10, admission.LineRules{PerSKU: 2})
	t0 := time.Now()
	a1 := e.wantAdmitted("a", t0)
	a2 := e.wantAdmitted("b", t0)
	e.wantInLine("c", t0, 0) // 8 units left, but 2 are being placed: PerSKU
	a1.Done(ctx)
	a2.Done(ctx)
	a, turn := e.ask("big", t0.Add(-time.Second), 5) // older than c, 5 units > PerSKU, nothing being placed
	if a == nil {
		t.Fatalf("the first in line asking more than PerSKU with nothing being placed: %+v, want admitted", turn)
	}
	a.Done(ctx)
	if err := e.rs.SetAvailable(ctx, e.sku, 0); err != nil {
		t.Fatal(err)
	}
	if a, turn := e.ask("c", t0, 1); a != nil || !turn.SoldOut || turn.SKU != e.sku {
		t.Fatalf("after the last unit went: admitted %v, %+v; want sold out", a != nil, turn)
	}
	if ids, _ := e.g.Line(ctx, e.sku); len(ids) != 0 {
		t.Errorf("the line after a sold-out answer: %v, want empty", ids)
	}
}

// TestLine_AnOrderOfTwoSKUsWaitsInBoth: an order whose second SKU has no unit free is not admitted on its
// first either (its count there is undone), and keeps its first arrival in both lines, so that it stays
// ahead of a later order in both and two orders cannot each hold what the other waits for.
func TestLine_AnOrderOfTwoSKUsWaitsInBoth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newLine(t, 5, admission.LineRules{})
	other := "LINE2-" + testenv.RandomID(4)
	if err := e.rs.SetAvailable(ctx, other, 1); err != nil {
		t.Fatal(err)
	}
	holder, _, err := e.g.Admit(ctx, admission.Ticket{}, []ordersaga.Line{{SKU: other, Qty: 1}}, nil, time.Minute)
	if err != nil || holder == nil {
		t.Fatalf("hold %s: %v", other, err)
	}
	t0 := time.Now()
	lines := []ordersaga.Line{{SKU: e.sku, Qty: 2}, {SKU: other, Qty: 1}}
	a, turn, err := e.g.Admit(ctx, admission.Ticket{ID: "both", Arrived: t0}, lines, nil, time.Minute)
	if err != nil || a != nil || turn.SKU != other {
		t.Fatalf("an order of two SKUs, the second held: %v %+v %v, want in line for %s", a != nil, turn, err, other)
	}
	if n, err := e.g.Admitting(ctx, e.sku); err != nil || n != 0 {
		t.Errorf("%d units of the first SKU still counted (%v), want 0", n, err)
	}
	for _, sku := range []string{e.sku, other} {
		if ids, _ := e.g.Line(ctx, sku); len(ids) != 1 || ids[0] != "both" {
			t.Errorf("the line of %s: %v, want [both]", sku, ids)
		}
	}
	// A later order of the first SKU alone waits behind it: the earlier order's 2 units are kept for it.
	if a, turn := e.ask("later", t0.Add(time.Second), 4); a != nil {
		t.Errorf("a later order of 4 units with the earlier order's 2 ahead, of 5: admitted (%+v), want in line", turn)
	}
	holder.Done(ctx)
	a, turn, err = e.g.Admit(ctx, admission.Ticket{ID: "both", Arrived: t0}, lines, nil, time.Minute)
	if err != nil || a == nil {
		t.Fatalf("the order of two SKUs once both free: %+v %v", turn, err)
	}
	a.Done(ctx)
}

// TestLine_SplitSKUCountsEveryShard: a SKU whose stock is in shards is not sold out while another shard has
// the units (the caller passes the shard count it read).
func TestLine_SplitSKUCountsEveryShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newLine(t, 0, admission.LineRules{})
	if err := e.rs.SetShards(ctx, e.sku, 3); err != nil {
		t.Fatal(err)
	}
	if err := e.rs.SetAvailable(ctx, redisstock.ShardName(e.sku, 2), 1); err != nil {
		t.Fatal(err)
	}
	lines := []ordersaga.Line{{SKU: e.sku, Qty: 1}}
	a, turn, err := e.g.Admit(ctx, admission.Ticket{ID: "s", Arrived: time.Now()}, lines, map[string]int{e.sku: 3}, time.Minute)
	if err != nil || a == nil {
		t.Fatalf("one unit on shard 2 of 3: %+v %v, want admitted", turn, err)
	}
	a.Done(ctx)
	if _, turn, err := e.g.Admit(ctx, admission.Ticket{ID: "s"}, []ordersaga.Line{{SKU: e.sku, Qty: 2}}, map[string]int{e.sku: 3}, time.Minute); err != nil || !turn.SoldOut {
		t.Errorf("two units asked of one left on the shards: %+v %v, want sold out", turn, err)
	}
}

// TestLine_FarTicketsKnowTheirPlaceWithoutARank: a ticket far back is answered from its last position less the
// tickets that left since (no rank: on the embedded Redis a rank sorts the whole line), and tickets abandoned
// at the front are dropped by the far tickets' calls too, so a line whose front left does not stall.
func TestLine_FarTicketsKnowTheirPlaceWithoutARank(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newLine(t, 1, admission.LineRules{Grace: 200 * time.Millisecond})
	holder := e.wantAdmitted("", time.Now())
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	id := func(i int) string { return fmt.Sprintf("t%02d", i) }
	for i := range 40 {
		e.wantInLine(id(i), at(i), int64(i))
	}
	holder.Done(ctx)
	a := e.wantAdmitted(id(0), at(0))
	e.wantInLine(id(30), at(30), 29) // far back: 30 ahead, one left
	// t01..t29 never come back: their tickets are abandoned once due (1-2 s) plus the grace; t30..t39 keep
	// coming back, and t30 gets the unit that t00's placement hands back.
	a.Done(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		for i := 31; i < 40; i++ {
			e.ask(id(i), at(i), 1)
		}
		adm, turn := e.ask(id(30), at(30), 1)
		if adm != nil {
			defer adm.Done(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("t30 not admitted 10 s after the front left: %+v", turn)
		}
		time.Sleep(300 * time.Millisecond)
	}
	e.wantInLine(id(31), at(31), 0)
	e.wantInLine(id(39), at(39), 8)
}

// TestLine_HolderComesBackBeforeItsTurn: a holder is told to come back at half its estimated wait (at least a
// second, at most MaxRetryAfter), so that it is back before its turn and the line never waits for holders away:
// a line whose holders came back when their turn was estimated admitted at the pace it had told them, never
// faster (the README's open-loop sale placed 10 orders a second with 16 to 40 of its 48 placements free).
func TestLine_HolderComesBackBeforeItsTurn(t *testing.T) {
	t.Parallel()
	e := newLine(t, 1, admission.LineRules{})
	e.wantAdmitted("", time.Now())
	t0 := time.Now()
	for i := range 120 {
		turn := e.wantInLine(fmt.Sprintf("t%03d", i), t0.Add(time.Duration(i)*time.Millisecond), int64(i))
		// Nothing is admitted meanwhile, so the pace is the default: 20 a second, 50 ms a place.
		if want := time.Duration(i+1) * 50 * time.Millisecond; turn.Wait != want || turn.RetryAfter < time.Second ||
			turn.RetryAfter > admission.MaxRetryAfter {
			t.Fatalf("position %d: %+v: want an estimated wait of %v and a Retry-After of 1s..%v", i, turn, want, admission.MaxRetryAfter)
		}
		half := max((turn.Wait/2 + time.Second - 1).Truncate(time.Second), time.Second)
		if turn.RetryAfter > half {
			t.Fatalf("position %d: Retry-After %v with an estimated wait of %v: want at most %v, back before its turn", i, turn.RetryAfter, turn.Wait, half)
		}
	}
}

// TestLine_OnlyTheFrontIsWoken: when this process frees units of a SKU, only the requests at the very front of
// its line are woken to ask again (each ask ranks the line, and one unit freed needs only the front); those
// further back are given no channel and ask on their own timer.
func TestLine_OnlyTheFrontIsWoken(t *testing.T) {
	t.Parallel()
	e := newLine(t, 1, admission.LineRules{})
	holder := e.wantAdmitted("", time.Now())
	t0 := time.Now()
	turns := make([]admission.Turn, 6)
	for i := range turns {
		turns[i] = e.wantInLine(fmt.Sprintf("w%d", i), t0.Add(time.Duration(i)*time.Millisecond), int64(i))
	}
	for i, turn := range turns {
		if woken := turn.Freed != nil; woken != (i < 2) {
			t.Errorf("position %d: given a wake channel %v, want %v (only the first two)", i, woken, i < 2)
		}
	}
	holder.Done(context.Background())
	for i := range 2 {
		select {
		case <-turns[i].Freed:
		case <-time.After(5 * time.Second):
			t.Fatalf("position %d not woken when the holder's unit freed", i)
		}
	}
}
