package placement_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestPlace_ConcurrentSameKey: 50 requests with one key at once, spread over five services (as over five
// starters), make exactly one order and one workflow, and every request gets the same answer.
func TestPlace_ConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	services := []*env{e, serviceOn(t, e.Env), serviceOn(t, e.Env), serviceOn(t, e.Env), serviceOn(t, e.Env)}
	e.Stock(t, "CONC-1", 1000, 250)
	line := ordersaga.Line{SKU: "CONC-1", Qty: 3}
	outs := atOnce(50, func(i int) placement.Outcome {
		return services[i%len(services)].place("k-concurrent", "u-c", line)
	})
	var first placement.Outcome
	replayed := 0
	for i, out := range outs {
		if out.Kind != placement.Reserved && out.Kind != placement.Replayed {
			t.Errorf("request %d: %s %+v", i, out.Kind, out)
			continue
		}
		if first.Answer.Body == nil {
			first = out
		}
		if out.Answer.Status != first.Answer.Status || !bytes.Equal(out.Answer.Body, first.Answer.Body) || out.OrderID != first.OrderID {
			t.Errorf("request %d answered %d %s, another %d %s", i, out.Answer.Status, out.Answer.Body, first.Answer.Status, first.Answer.Body)
		}
		if out.Kind == placement.Replayed {
			replayed++
		}
	}
	if replayed != len(outs)-1 {
		t.Logf("%d of %d answers replayed", replayed, len(outs)) // the first keeper's is not; timing decides the rest
	}
	if got := e.countRows("orders", "user_id = ?", "u-c"); got != 1 {
		t.Errorf("%d orders, want exactly 1", got)
	}
	if got := e.countRows("order_lines", "sku = ?", "CONC-1"); got != 1 {
		t.Errorf("%d order lines, want 1", got)
	}
	if got := e.countRows("stock_ledger", "sku = ? AND op = ?", "CONC-1", "DEDUCT"); got != 1 {
		t.Errorf("%d deducts, want 1", got)
	}
	if got := e.countWorkflows("WorkflowType = 'OrderWorkflow' AND OrderSKUs = 'CONC-1'", 1); got != 1 {
		t.Errorf("%d workflows, want exactly 1", got)
	}
	inv, err := e.Store.Inventory(context.Background(), "CONC-1")
	if err != nil || inv.Stock != 997 {
		t.Errorf("stock %d (%v), want 997", inv.Stock, err)
	}
}

// TestPlace_SameKeyGatedWhileTheFirstStarts: two requests with one key and body (a client's retry after a
// timeout). The first (B) has its units admitted and the key claimed; the retry (A) reads the key's row (not
// started yet), then B marks the key started and places the order, then A asks the admission gate, which
// refuses it: B's units leave none. The key's order is started, so A must answer as B does (or Pending),
// never sold out (docs/http-api.md, "the same key while the first request is still deciding"). A Redis hook
// orders the steps: it holds B once B is admitted and its marker set, and holds A's admission until B has
// marked the key started.
func TestPlace_SameKeyGatedWhileTheFirstStarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const sku, user, key = "RACE-1", "u-race", "k-race"
	e.Stock(t, sku, 1, 100)
	line := ordersaga.Line{SKU: sku, Qty: 1}
	// The service's start-up backfill of the markers is over before the race: a backfill during it could write
	// this key's marker, which would pass for B's step in the hook. With the markers ready B is gated before
	// its claim, and A, which finds the marker, after its claim.
	waitReady(t, e)
	h := &sameKeyHook{
		admitting: e.Redis.AdmittingKey(sku),
		marker:    e.Redis.ClaimKey(placement.MarkerName(user, key)),
		bHeld:     make(chan struct{}),
		releaseB:  make(chan struct{}),
	}
	h.waitStarted = func() {
		deadline := time.Now().Add(time.Minute)
		for {
			rec, err := e.Store.IdempotencyKey(context.Background(), user, key)
			if err == nil && rec.Started {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("the first request did not mark the key started within a minute: %+v %v", rec, err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	hookEveryCommand(t, e.Redis.Client(), h)

	var b placement.Outcome
	var wg sync.WaitGroup
	wg.Go(func() { b = e.place(key, user, line) })
	select {
	case <-h.bHeld:
	case <-time.After(time.Minute):
		close(h.releaseB)
		wg.Wait()
		t.Fatalf("the first request was not held after its admission and its marker: %s %+v", b.Kind, b)
	}
	a := e.place(key, user, line)
	wg.Wait()

	if b.Kind != placement.Reserved && b.Kind != placement.Replayed {
		t.Fatalf("first request: %s %+v, want its order reserved (or the retry's kept answer)", b.Kind, b)
	}
	t.Logf("retry: %s", a.Kind)
	switch a.Kind {
	case placement.Reserved, placement.Replayed, placement.Pending:
		if a.OrderID != b.OrderID {
			t.Errorf("retry answered order %s (%s), the first %s", a.OrderID, a.Kind, b.OrderID)
		}
	default:
		t.Errorf("retry: %s %+v, want the first request's order (reserved, replayed or pending)", a.Kind, a)
	}
	if h.admits.Load() < 2 {
		t.Errorf("%d admissions asked, want at least 2 (the retry's come after the first request's; refused, it asks again)", h.admits.Load())
	}
	if n := e.countRows("orders", "user_id = ?", user); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
}

// hookEveryCommand adds h where it sees every command of rdb: the client itself, or on a cluster each master's
// client, which runs the cluster client's commands and pipelines and also the writes sent to a master directly
// (the idempotency markers a replica must acknowledge: redisstock.Store.AckMarkers).
func hookEveryCommand(t *testing.T, rdb redis.UniversalClient, h redis.Hook) {
	t.Helper()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		rdb.AddHook(h)
		return
	}
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
	if err := cc.ForEachMaster(context.Background(), func(_ context.Context, m *redis.Client) error {
		m.AddHook(h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sameKeyHook orders two requests with one key (TestPlace_SameKeyGatedWhileTheFirstStarts): the first
// admission (B's) and the marker's write are B's; once both are done B is held until the second admission
// (A's) comes, which lets B go and waits for it to mark the key started before it runs.
type sameKeyHook struct {
	admitting, marker string
	waitStarted       func()
	bHeld, releaseB   chan struct{}
	admits, bSteps    atomic.Int32
	held              atomic.Bool // the first request is held: an admission now is the retry's
	letB              sync.Once
}

func (h *sameKeyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sameKeyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.around(ctx, []redis.Cmder{cmd}, func(ctx context.Context, _ []redis.Cmder) error { return next(ctx, cmd) })
	}
}

func (h *sameKeyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return h.around(ctx, cmds, next) }
}

// around runs cmds, holding them as the test's order says: an admission is a call of the line's script with
// the SKU's admitting key (an EVALSHA refused NOSCRIPT is no step: the EVAL that follows is), a marker a SET.
func (h *sameKeyHook) around(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
	admit, mark := false, false
	for _, c := range cmds {
		args := c.Args()
		switch {
		case (c.Name() == "evalsha" || c.Name() == "eval") && len(args) > 4 && args[4] == h.admitting:
			admit = true
		case c.Name() == "set" && len(args) > 1 && args[1] == h.marker:
			mark = true
		}
	}
	if admit && h.held.Load() {
		// The retry's admission: asked once the first request is held.
		h.admits.Add(1)
		h.letB.Do(func() {
			close(h.releaseB)
			h.waitStarted()
		})
		return next(ctx, cmds)
	}
	err := next(ctx, cmds)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return err // not run: go-redis sends the script itself next
	}
	if admit {
		h.admits.Add(1)
	}
	if (admit || mark) && h.bSteps.Add(1) == 2 {
		h.held.Store(true)
		close(h.bHeld)
		select {
		case <-h.releaseB:
		case <-time.After(time.Minute):
		}
	}
	return err
}

// countingClient is the Temporal client with its Update-with-Start calls in flight counted, and the most seen
// at once kept.
type countingClient struct {
	client.Client
	now, most atomic.Int64
}

func (c *countingClient) UpdateWithStartWorkflow(ctx context.Context, opts client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	h, err := c.Client.UpdateWithStartWorkflow(ctx, opts)
	if err != nil {
		return h, err
	}
	// The call returns once the update is accepted; waiting for its result is part of the placement.
	var res workflows.Reservation
	return h, h.Get(ctx, &res)
}

// A flash sale's first second starts as many placements as there are units left; one process keeps at most
// MaxPlacing of them in Temporal at once, and the others wait their turn and are placed all the same.
func TestPlace_BoundsUpdateWithStartInFlight(t *testing.T) {
	t.Parallel()
	se := sagatest.Start(t)
	cc := &countingClient{Client: se.Client}
	e := serviceOn(t, se, func(c *placement.Config) {
		c.Temporal = cc
		c.MaxPlacing = 2
	})
	e.Stock(t, "BOUND-1", 100, 100)
	const n = 12
	outs := atOnce(n, func(i int) placement.Outcome {
		return e.place(fmt.Sprintf("k-bound-%02d", i), fmt.Sprintf("u-bound-%02d", i), ordersaga.Line{SKU: "BOUND-1", Qty: 1})
	})
	for i, out := range outs {
		want(t, out, placement.Reserved)
		if out.OrderID == "" {
			t.Errorf("order %d: no order ID", i)
		}
	}
	if most := cc.most.Load(); most > 2 || most < 1 {
		t.Errorf("at most %d Update-with-Start calls were in flight at once, want 1 or 2 (MaxPlacing)", most)
	}
	if got := e.places.value(); got != n {
		t.Errorf("%d Update-with-Start calls, want %d", got, n)
	}
}

// heldClient is the Temporal client with its Update-with-Start calls held until release is closed; inCall
// counts the calls that have reached it.
type heldClient struct {
	client.Client
	release chan struct{}
	inCall  atomic.Int64
}

func (c *heldClient) UpdateWithStartWorkflow(ctx context.Context, opts client.UpdateWithStartWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.inCall.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.Client.UpdateWithStartWorkflow(ctx, opts)
}

// A new key that arrives while the deployment already places PerSKU units of its SKU (one in Temporal, one
// waiting for this process's only call slot) waits its turn in the SKU's line for LineHold and is answered
// InLine: nothing done for it but its ticket (no row, no units counted, no workflow). The placements ahead of
// it are placed all the same, and its retry, once there is room, is placed in its turn.
func TestPlace_InLinePastTheUnitsBeingPlaced(t *testing.T) {
	t.Parallel()
	const sku = "BUSY-1"
	line := ordersaga.Line{SKU: sku, Qty: 2}
	q := fullQueue(t, 100*time.Millisecond, sku, line, "busy")

	e, hc := q.e, q.hc
	asked := time.Now()
	out := want(t, e.place("k-busy-c", "u-busy-c", line), placement.InLine)
	if waited := time.Since(asked); waited < 100*time.Millisecond {
		t.Errorf("answered InLine after %s, want after LineHold (100ms) with no place freed", waited)
	}
	if out.SKU != sku || out.Position != 0 {
		t.Errorf("in line for %q at %d, want for %s at 0", out.SKU, out.Position, sku)
	}
	e.noKey(t, "u-busy-c", "k-busy-c", "an answer in line")
	if n, err := e.Gate.Admitting(context.Background(), sku); err != nil || n != 4 {
		t.Errorf("%d units counted as being placed (%v), want 4: the two placements' and none of the one in line", n, err)
	}
	if ids, err := e.Gate.Line(context.Background(), sku); err != nil || len(ids) != 1 || ids[0] != placement.MarkerName("u-busy-c", "k-busy-c") {
		t.Errorf("the line holds %v (%v), want the ticket of k-busy-c", ids, err)
	}
	if got := hc.inCall.Load(); got != 1 {
		t.Errorf("%d Update-with-Start calls reached Temporal, want 1 (the slot's)", got)
	}
	// The gauges an operator watches say the same: one call in flight, one placement waiting for it (the
	// waiting one reaches the wait a moment after its key is marked started).
	q.waitFor("the gauges show one placement in flight and one waiting", func() bool {
		return e.inFlight.value() == 1 && e.waiting.value() == 1
	})

	first, nxt := q.release()
	want(t, first, placement.Reserved)
	want(t, nxt, placement.Reserved)
	if e.inFlight.value() != 0 || e.waiting.value() != 0 {
		t.Errorf("gauges after both placements ended: %d in flight, %d waiting, want 0 and 0", e.inFlight.value(), e.waiting.value())
	}
	retry := want(t, e.place("k-busy-c", "u-busy-c", line), placement.Reserved)
	if retry.OrderID == "" || retry.OrderID == first.OrderID || retry.OrderID == nxt.OrderID {
		t.Errorf("the retry of the key in line placed order %q, want an order of its own (%s, %s)", retry.OrderID, first.OrderID, nxt.OrderID)
	}
	if n := e.countRows("orders", "user_id IN (?, ?, ?)", "u-busy-a", "u-busy-b", "u-busy-c"); n != 3 {
		t.Errorf("%d orders, want 3", n)
	}
	if n, err := e.Gate.Admitting(context.Background(), sku); err != nil || n != 0 {
		t.Errorf("%d units still counted as being placed (%v), want 0", n, err)
	}
	if ids, err := e.Gate.Line(context.Background(), sku); err != nil || len(ids) != 0 {
		t.Errorf("the line holds %v (%v) after every placement, want none", ids, err)
	}
}

// A new key near the front of the line waits in the server up to LineHold for its turn: a place that frees
// meanwhile (here, in this process: the wake) goes to it, and the key is placed, not answered InLine.
func TestPlace_InLineWaitsInTheServerForItsTurn(t *testing.T) {
	t.Parallel()
	const sku = "BUSYWAIT-1"
	line := ordersaga.Line{SKU: sku, Qty: 1}
	q := fullQueue(t, time.Minute, sku, line, "bw")
	e := q.e
	third := make(chan placement.Outcome, 1)
	go func() { third <- e.place("k-bw-c", "u-bw-c", line) }()
	select {
	case out := <-third:
		t.Fatalf("the key in line was answered %v at once, want it to wait for its turn", out.Kind)
	case <-time.After(300 * time.Millisecond):
	}
	e.noKey(t, "u-bw-c", "k-bw-c", "a key waiting for its turn")
	first, nxt := q.release()
	outs := []placement.Outcome{first, nxt, <-third}
	for i, out := range outs {
		want(t, out, placement.Reserved)
		for _, other := range outs[:i] {
			if out.OrderID == other.OrderID {
				t.Errorf("two keys placed order %s", out.OrderID)
			}
		}
	}
	if n, err := e.Gate.Admitting(context.Background(), sku); err != nil || n != 0 {
		t.Errorf("%d units still counted as being placed (%v), want 0", n, err)
	}
}

// queue is a service that places one order at a time (MaxPlacing 1) in a deployment that places two orders'
// units of a SKU at once (PerSKU), its Update-with-Start calls held, and both taken: k-<tag>-a in the call,
// k-<tag>-b admitted and waiting for it.
type queue struct {
	e       *env
	hc      *heldClient
	wg      sync.WaitGroup
	waitFor func(what string, done func() bool)    // polls done for up to a minute, failing the test after it
	release func() (first, next placement.Outcome) // lets the held calls go and returns the two placements
}

func fullQueue(t *testing.T, lineHold time.Duration, sku string, line ordersaga.Line, tag string) *queue {
	t.Helper()
	se := sagatest.Start(t)
	q := &queue{hc: &heldClient{Client: se.Client, release: make(chan struct{})}}
	let := sync.OnceFunc(func() { close(q.hc.release) })
	t.Cleanup(let)
	q.e = serviceOn(t, se, func(c *placement.Config) {
		c.Temporal = q.hc
		c.MaxPlacing = 1
		c.LineHold = lineHold
	})
	q.e.Gate.SetLineRules(admission.LineRules{PerSKU: 2 * line.Qty})
	waitReady(t, q.e)
	q.e.Stock(t, sku, 100, 100)
	q.waitFor = func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what) // the cleanup releases the held calls
			}
		}
	}
	var first, next placement.Outcome
	q.wg.Go(func() { first = q.e.place("k-"+tag+"-a", "u-"+tag+"-a", line) })
	q.waitFor("the first placement reaches Temporal", func() bool { return q.hc.inCall.Load() == 1 })
	q.wg.Go(func() { next = q.e.place("k-"+tag+"-b", "u-"+tag+"-b", line) })
	q.waitFor("the second placement waits for the slot", func() bool {
		rec, err := q.e.Store.IdempotencyKey(context.Background(), "u-"+tag+"-b", "k-"+tag+"-b")
		return err == nil && rec.Started
	})
	q.release = func() (placement.Outcome, placement.Outcome) {
		let()
		q.wg.Wait()
		return first, next
	}
	return q
}
