package faults_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// probeSKU is the SKU of the probe order that measures recovery.
const probeSKU = "FLT-P"

// scenario is one fault kind: inject breaks a store while the load runs and returns once the fault is
// cleared, with how many faults it injected and a note for the figure.
type scenario struct {
	name string
	opts stackOptions
	// lasts is about how long inject takes (0: faultFor): the load's placements span it.
	lasts  time.Duration
	inject func(ctx context.Context, t *testing.T, s *stack) (injected int, note string)
	// redis is what a Redis fault must be seen to have done (nil: not a Redis fault).
	redis *redisEvidence
}

// redisEvidence is what a Redis fault must have done for its run to count as evidence: a run whose fault
// never reached the stack passes every invariant and proves nothing.
type redisEvidence struct {
	// unreachable: the worker's Redis calls failed (refused, reset, timed out) during the run.
	unreachable bool
	// fellBack: with the fallback on, reserves fell back to the database (the outage outlasts the client's
	// own retries). With the fallback off no reserve may fall back, whatever the fault.
	fellBack bool
	// comebacks are the keys Redis must have loaded at each of its starts after the first: 0 for a
	// comeback empty, -1 for some (a snapshot's).
	comebacks []int64
}

// figure is what one run measured.
type figure struct {
	orders, accepted, duringFault, injected int
	outcomes                                map[ordersaga.Status]int
	oversold, lost, duplicates, drift       int
	conservation, other                     int
	stuck, wrong, loadErrors                int
	faultFor, recovery, settled             time.Duration
	repairs                                 int
	fallback                                bool
	redisFailures, fallbacks, coldLoads     int
	comebacks                               []int64
	note                                    string
}

func (f figure) String() string {
	return fmt.Sprintf("fallback=%s orders=%d accepted=%d placed_during_fault=%d faults=%d fault_for=%s outcomes=%v "+
		"oversold=%d lost=%d duplicate_deductions=%d drift=%d conservation=%d other_violations=%d stuck=%d wrong_final=%d load_errors=%d "+
		"recovery=%s settled=%s reconcile_repairs=%d redis_failures=%d db_fallbacks=%d cold_loads=%d redis_comebacks_keys=%v %s",
		onOff(f.fallback), f.orders, f.accepted, f.duringFault, f.injected, f.faultFor.Round(time.Millisecond), f.outcomes,
		f.oversold, f.lost, f.duplicates, f.drift, f.conservation, f.other, f.stuck, f.wrong, f.loadErrors,
		f.recovery.Round(time.Millisecond), f.settled.Round(time.Millisecond), f.repairs,
		f.redisFailures, f.fallbacks, f.coldLoads, f.comebacks, f.note)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// runFallbacks runs the scenario twice, with the reserve's Redis-down fallback off and on (the processes'
// default, RESERVE_DB_FALLBACK), the same load each time.
func (sc scenario) runFallbacks(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run("fallback="+onOff(on), func(t *testing.T) {
			run := sc
			run.opts.dbFallback = on
			run.run(t)
		})
	}
}

// run starts the stack, runs the load with the fault injected 300 ms in, then settles, reconciles, checks
// the invariants and that the fault happened, and logs the figure line.
func (sc scenario) run(t *testing.T) {
	s := newStack(t, sc.opts)
	stock := maps.Clone(loadStock)
	stock[probeSKU] = 5
	for sku, n := range stock {
		s.env.Stock(t, sku, n, price)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lasts := sc.lasts
	if lasts == 0 {
		lasts = faultFor
	}
	orders := loadInputs(sc.name, loadOrders)
	loaded := make(chan struct{})
	started := time.Now()
	spacing := (lasts + time.Second) / loadOrders // placements from 300 ms before the fault to after it
	go func() { runLoad(ctx, s.env.Client, orders, spacing); close(loaded) }()
	time.Sleep(300 * time.Millisecond)
	f := figure{orders: len(orders), fallback: sc.opts.dbFallback}
	faultStart := time.Now()
	f.injected, f.note = sc.inject(ctx, t, s)
	cleared := time.Now()
	f.faultFor = cleared.Sub(faultStart)
	f.recovery = probe(ctx, t, s, sc.name)
	<-loaded
	settle(ctx, s.env.Client, orders)
	f.settled = time.Since(started)
	for _, o := range orders {
		if !o.placedAt.After(cleared) && !o.decidedAt.Before(faultStart) {
			f.duringFault++
		}
	}
	f.redisFailures = int(s.redisFailures.n.Load())
	f.fallbacks, f.coldLoads = s.metric(t, metricFallbacks), s.metric(t, metricColdLoads)
	f.comebacks = s.redis.Comebacks()
	sc.judge(ctx, t, s, orders, stock, &f)
	sc.happened(t, f)
	t.Logf("FIGURE %s: %s", sc.name, f)
}

// happened fails the run when its fault did not happen as named, or no order was placed during it.
func (sc scenario) happened(t *testing.T, f figure) {
	t.Helper()
	if f.injected == 0 {
		t.Errorf("%s: no fault injected", sc.name)
	}
	if f.duringFault == 0 {
		t.Errorf("%s: no order was placed while the fault lasted (%s)", sc.name, f.faultFor)
	}
	if !f.fallback && f.fallbacks != 0 {
		t.Errorf("%s: the fallback is off and %d reserves fell back to the database", sc.name, f.fallbacks)
	}
	ev := sc.redis
	if ev == nil {
		return
	}
	if ev.unreachable && f.redisFailures == 0 {
		t.Errorf("%s: no Redis call of the worker failed: the stack never met the fault", sc.name)
	}
	if ev.fellBack && f.fallback && f.fallbacks == 0 {
		t.Errorf("%s: the fallback is on and no reserve fell back to the database", sc.name)
	}
	if len(ev.comebacks) > 0 && !slices.ContainsFunc(ev.comebacks, func(n int64) bool { return n != 0 }) && f.coldLoads+f.fallbacks == 0 {
		t.Errorf("%s: Redis came back empty and no reserve loaded a counter or fell back: the stack never met the empty Redis", sc.name)
	}
	if len(f.comebacks) != len(ev.comebacks) {
		t.Errorf("%s: Redis came back %d times (keys loaded %v), want %d", sc.name, len(f.comebacks), f.comebacks, len(ev.comebacks))
		return
	}
	for i, want := range ev.comebacks {
		if got := f.comebacks[i]; (want < 0 && got == 0) || (want >= 0 && got != want) {
			t.Errorf("%s: comeback %d loaded %d keys, want %s", sc.name, i+1, got, map[bool]string{true: "some (a snapshot)", false: "none (empty)"}[want < 0])
		}
	}
}

// probe places one order of the probe SKU and cancels it, again and again until both succeed, and returns
// the time this took: how long after the fault was cleared an order goes through end to end.
func probe(ctx context.Context, t *testing.T, s *stack, name string) time.Duration {
	t.Helper()
	start := time.Now()
	in := workflows.OrderInput{OrderID: name + "-probe", UserID: "prober", Currency: "CNY",
		Lines: []ordersaga.Line{{SKU: probeSKU, Qty: 1}}, PaymentTimeout: 2 * time.Minute}
	for ctx.Err() == nil {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := orderclient.Place(attempt, s.env.Client, in)
		if err == nil {
			_, err = orderclient.Cancel(attempt, s.env.Client, in.OrderID, "probe")
		}
		cancel()
		if err == nil {
			return time.Since(start)
		}
	}
	t.Errorf("probe order %s never went through after the fault", in.OrderID)
	return time.Since(start)
}

// judge reconciles, checks the invariants and the orders' final states, and fills the figure's counters.
func (sc scenario) judge(ctx context.Context, t *testing.T, s *stack, orders []*order, stock map[string]int64, f *figure) {
	t.Helper()
	f.outcomes = map[ordersaga.Status]int{}
	lost, err := lostOrders(ctx, s.env.Store, orders)
	if err != nil {
		t.Fatal(err)
	}
	f.lost = len(lost)
	for _, id := range lost {
		t.Errorf("order %s: its placement was accepted and the database does not hold it (lost)", id)
	}
	for _, o := range orders {
		if o.accepted() {
			f.accepted++
		}
		if o.err != nil {
			f.loadErrors++
			t.Errorf("load: %v", o.err)
		}
		f.outcomes[o.final]++
		switch {
		case !o.final.Final():
			f.stuck++
			t.Errorf("order %s (%s) not final: %q", o.in.OrderID, o.group, o.final)
		case o.final == ordersaga.StatusRejected && o.res.SoldOutSKU == "":
			f.wrong++
			t.Errorf("order %s (%s) rejected without a sold-out SKU: %+v", o.in.OrderID, o.group, o.res)
		case o.final != o.wantFinal():
			f.wrong++
			t.Errorf("order %s (%s): final %s, want %s", o.in.OrderID, o.group, o.final, o.wantFinal())
		}
	}
	_, res, err := platform.RunOnce(ctx, s.env.Client, workflows.ReconcileInput{BatchSize: 10, Grace: -1})
	if err != nil {
		t.Fatalf("reconcile after the fault: %v", err)
	}
	f.repairs = res.Repairs()
	rep, err := invariants.Check(ctx, s.env.Store, s.env.Redis, stock, true)
	if err != nil {
		t.Fatalf("check the invariants: %v", err)
	}
	countViolations(rep, f)
	if !rep.OK() {
		t.Errorf("invariants after the fault and reconciliation:\n%s", rep)
	}
}

// lostOrders are the orders whose placement was accepted (answered AWAITING_PAYMENT: the API's 201) that the
// database does not hold: RELIABILITY.md's "lost".
func lostOrders(ctx context.Context, store *sqlstore.Store, orders []*order) ([]string, error) {
	var lost []string
	for _, o := range orders {
		if !o.accepted() {
			continue
		}
		_, err := store.Order(ctx, o.res.Order.OrderID)
		switch {
		case errors.Is(err, ordersaga.ErrNotFound):
			lost = append(lost, o.res.Order.OrderID)
		case err != nil:
			return nil, fmt.Errorf("lost orders: read order %s: %w", o.res.Order.OrderID, err)
		}
	}
	return lost, nil
}

// countViolations sorts the report's violations into the figure's counters.
func countViolations(rep invariants.Report, f *figure) {
	for _, v := range rep.Violations {
		switch {
		case strings.HasPrefix(v, "I2"):
			f.oversold++
		case strings.HasPrefix(v, "I1"):
			f.conservation++
		case strings.HasPrefix(v, "I3"):
			f.drift++
		case strings.Contains(v, " DEDUCT rows"), strings.Contains(v, "more than once"): // orderledger's Twice: the check that can fail
			f.duplicates++
		default:
			f.other++
		}
	}
}
