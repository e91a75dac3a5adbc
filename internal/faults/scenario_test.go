package faults_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

// probeSKU is the SKU of the probe order that measures recovery.
const probeSKU = "FLT-P"

// scenario is one fault kind: inject breaks a store while the load runs and returns once the fault is
// cleared, with how many faults it injected and a note for the figure.
type scenario struct {
	name   string
	opts   stackOptions
	inject func(ctx context.Context, t *testing.T, s *stack) (injected int, note string)
}

// figure is what one run measured.
type figure struct {
	orders, duringFault, injected            int
	outcomes                                 map[ordersaga.Status]int
	oversold, lost, duplicates, drift, other int
	stuck, wrong, loadErrors                 int
	faultFor, recovery, settled              time.Duration
	repairs                                  int
	note                                     string
}

func (f figure) String() string {
	return fmt.Sprintf("orders=%d placed_during_fault=%d faults=%d fault_for=%s outcomes=%v oversold=%d lost=%d duplicate_deductions=%d drift=%d "+
		"other_violations=%d stuck=%d wrong_final=%d load_errors=%d recovery=%s settled=%s reconcile_repairs=%d %s",
		f.orders, f.duringFault, f.injected, f.faultFor.Round(time.Millisecond), f.outcomes, f.oversold, f.lost, f.duplicates, f.drift,
		f.other, f.stuck, f.wrong, f.loadErrors, f.recovery.Round(time.Millisecond), f.settled.Round(time.Millisecond),
		f.repairs, f.note)
}

// run starts the stack, runs the load with the fault injected 300 ms in, then settles, reconciles, checks
// the invariants and logs the figure line.
func (sc scenario) run(t *testing.T) {
	s := newStack(t, sc.opts)
	stock := maps.Clone(loadStock)
	stock[probeSKU] = 5
	for sku, n := range stock {
		s.env.Stock(t, sku, n, price)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orders := loadInputs(sc.name, loadOrders)
	loaded := make(chan struct{})
	started := time.Now()
	spacing := (faultFor + time.Second) / loadOrders // placements from 300 ms before the fault to after it
	go func() { runLoad(ctx, s.env.Client, orders, spacing); close(loaded) }()
	time.Sleep(300 * time.Millisecond)
	f := figure{orders: len(orders)}
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
	sc.judge(ctx, t, s, orders, stock, &f)
	t.Logf("FIGURE %s: %s", sc.name, f)
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
	for _, o := range orders {
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

// countViolations sorts the report's violations into the figure's counters.
func countViolations(rep invariants.Report, f *figure) {
	for _, v := range rep.Violations {
		switch {
		case strings.HasPrefix(v, "I2"):
			f.oversold++
		case strings.HasPrefix(v, "I1"):
			f.lost++
		case strings.HasPrefix(v, "I3"):
			f.drift++
		case strings.Contains(v, " DEDUCT rows"):
			f.duplicates++
		default:
			f.other++
		}
	}
}
