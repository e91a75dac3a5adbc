package reconcile_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// env is a running saga with reconciliation: the in-process Temporal server, the test's stores, and a worker
// whose activities have the workflow probe, metrics and (optionally) the Redis-down fallback.
type env struct {
	c     client.Client
	store *sqlstore.Store
	rs    *redisstock.Store
	acts  *activities.Activities
	reg   *prometheus.Registry
}

type envOptions struct {
	redis      *redisstock.Store // nil: testenv's (REDIS_ADDR or miniredis)
	dbFallback bool
}

func startEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	srv := sagatest.NewServer(t)
	c := srv.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := platform.RegisterSearchAttributes(ctx, c, srv.GetDefaultNamespace()); err != nil {
		t.Fatalf("register search attributes: %v", err)
	}
	e := &env{c: c, store: testenv.MustOpenStore(t), rs: o.redis, reg: prometheus.NewRegistry()}
	if e.rs == nil {
		e.rs = testenv.MustOpenRedis(t)
	}
	acts, err := platform.NewActivities(c, e.rs, e.store, config.Config{ReserveDBFallback: o.dbFallback}, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.acts = acts
	w, err := platform.StartWorker(c, acts, worker.Options{MaxConcurrentActivityExecutionSize: 200, MaxConcurrentWorkflowTaskExecutionSize: 200})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return e
}

// stock sets a SKU in the database and loads Redis to match.
func (e *env) stock(t testing.TB, sku string, n int64) {
	t.Helper()
	if err := e.store.SetInventory(context.Background(), sku, n, 100); err != nil {
		t.Fatal(err)
	}
	if err := e.rs.SetAvailable(context.Background(), sku, n); err != nil {
		t.Fatal(err)
	}
}

// reconcileOnce runs one ReconcileWorkflow through the worker and returns its summary.
func (e *env) reconcileOnce(t testing.TB, grace time.Duration) reconcile.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, res, err := platform.RunOnce(ctx, e.c, workflows.ReconcileInput{Grace: grace, BatchSize: 3})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res.ReconcileSummary
}

// check asserts I1–I4 for the SKUs (quiet: no order in flight) and returns the report.
func (e *env) check(t testing.TB, expected map[string]int64, quiet bool) invariants.Report {
	t.Helper()
	rep, err := invariants.Check(context.Background(), e.store, e.rs, expected, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("invariants violated:\n%s", rep)
	}
	return rep
}

// repairRows counts the stock_anomalies rows that record a change.
func (e *env) repairRows(t testing.TB) int {
	t.Helper()
	rows, err := e.store.Anomalies(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		for _, a := range sqlstore.RepairActions {
			if r.Action == a {
				n++
			}
		}
	}
	return n
}

// envInt reads a positive integer from the environment, or def.
func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// load is a mix of orders against a few SKUs: a third paid, a third cancelled, a third left to expire.
type load struct {
	prefix      string
	skus        []string
	orders      int
	concurrency int
	expireAfter time.Duration
	seed        uint64
	shards      map[string]int // the SKUs split in Redis, with their shard count (the orders' input)
}

type loadResult struct {
	placed, reserved, rejected, paid, cancelled, failed, retried atomic.Int64
	ids                                                          []string
	elapsed                                                      time.Duration
}

func (r *loadResult) String() string {
	return fmt.Sprintf("%d orders in %s: %d reserved (%d paid, %d cancelled, the rest left to expire), %d rejected, %d failed calls (%d calls made again)",
		r.placed.Load(), r.elapsed.Round(time.Millisecond), r.reserved.Load(), r.paid.Load(), r.cancelled.Load(),
		r.rejected.Load(), r.failed.Load(), r.retried.Load())
}

// run places the orders (each placed, then paid, cancelled or left to expire) and returns when every call
// has answered; onOrder, if set, is called after each order's calls with the count so far.
func (l load) run(ctx context.Context, t testing.TB, c client.Client, onOrder func(done int)) *loadResult {
	res := &loadResult{ids: make([]string, l.orders)}
	rng := rand.New(rand.NewPCG(l.seed, l.seed^0xabcdef))
	inputs := make([]workflows.OrderInput, l.orders)
	for i := range inputs {
		first := rng.IntN(len(l.skus))
		lines := []ordersaga.Line{{SKU: l.skus[first], Qty: int64(1 + rng.IntN(3))}}
		if rng.IntN(4) == 0 {
			lines = append(lines, ordersaga.Line{SKU: l.skus[(first+1)%len(l.skus)], Qty: 1})
		}
		timeout := 10 * time.Minute
		if i%3 == 2 {
			timeout = l.expireAfter
		}
		id := fmt.Sprintf("%s-%05d", l.prefix, i)
		res.ids[i] = id
		inputs[i] = workflows.OrderInput{OrderID: id, UserID: "u" + strconv.Itoa(i%50), Currency: "CNY", Lines: lines, PaymentTimeout: timeout,
			Shards: l.shards}
	}
	var done atomic.Int64
	sem := make(chan struct{}, l.concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i, in := range inputs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			defer func() {
				if onOrder != nil {
					onOrder(int(done.Add(1)))
				}
			}()
			// A client retries a place whose answer it did not get (the workflow ID makes it the same order).
			var r workflows.Reservation
			err := res.call(ctx, t, func() (err error) {
				r, err = orderclient.Place(ctx, c, in)
				return err
			})
			res.placed.Add(1)
			if err != nil {
				res.failed.Add(1)
				t.Logf("place %s: %v\n%s", in.OrderID, err, describeOrder(c, in.OrderID))
				return
			}
			if r.Order.Status != ordersaga.StatusAwaitingPayment {
				res.rejected.Add(1)
				return
			}
			res.reserved.Add(1)
			switch i % 3 {
			case 0:
				var pr ordersaga.PaymentResult
				err = res.call(ctx, t, func() (err error) { // the same event: applied once however often it comes
					pr, err = orderclient.Pay(ctx, c, in.OrderID, workflows.PaymentSignal{
						EventID: "evt-" + in.OrderID, AmountCents: r.Order.AmountCents, Currency: "CNY"})
					return err
				})
				if pr == ordersaga.PaymentDuplicate { // an earlier attempt was applied, its answer lost
					pr = ordersaga.PaymentApplied
				}
				if err != nil || pr != ordersaga.PaymentApplied {
					res.failed.Add(1)
					t.Logf("pay %s: %v %v\n%s", in.OrderID, pr, err, describeOrder(c, in.OrderID))
					return
				}
				res.paid.Add(1)
			case 1:
				var o ordersaga.Order
				err = res.call(ctx, t, func() (err error) {
					o, err = orderclient.Cancel(ctx, c, in.OrderID, "load test")
					return err
				})
				if err != nil || o.Status != ordersaga.StatusCancelled {
					res.failed.Add(1)
					t.Logf("cancel %s: %v %v\n%s", in.OrderID, o.Status, err, describeOrder(c, in.OrderID))
					return
				}
				res.cancelled.Add(1)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// call makes a call as a client does that did not get its answer: again after a pause (100 ms, doubling to 2 s)
// for up to a minute, each failure logged and counted (retried); it returns the last error.
func (r *loadResult) call(ctx context.Context, t testing.TB, call func() error) error {
	pause, give := 100*time.Millisecond, time.Now().Add(time.Minute)
	for {
		err := call()
		if err == nil || ctx.Err() != nil || time.Now().After(give) {
			return err
		}
		r.retried.Add(1)
		t.Logf("call failed, trying again in %s: %v", pause, err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// awaitClosed waits until every order of the load has closed (the expiring ones take their timeout). An order
// whose call failed would only close at its ten-minute payment timeout, so a failed call fails the test here,
// at once; an order that has not closed within wait is described (its status, its pending activities and
// their last failures) rather than left to the test's own deadline.
func (r *loadResult) awaitClosed(ctx context.Context, t testing.TB, c client.Client, wait time.Duration) {
	t.Helper()
	if n := r.failed.Load(); n != 0 {
		t.Fatalf("%d order calls failed (logged above): their orders would wait for their payment timeout", n)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, id := range r.ids {
		var o ordersaga.Order
		if err := c.GetWorkflow(wctx, workflows.OrderWorkflowID(id), "").Get(wctx, &o); err != nil {
			t.Fatalf("order %s did not close within %s: %v\n%s", id, wait, err, describeOrder(c, id))
		}
		if !o.Status.Final() {
			t.Fatalf("order %s closed in status %s", id, o.Status)
		}
	}
}

// describeOrder says where an order's workflow stands: its status, its pending workflow task and activities,
// and the failures of its workflow tasks.
func describeOrder(c client.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if o, err := orderclient.Status(ctx, c, id); err == nil {
		fmt.Fprintf(&b, "  order status %s\n", o.Status)
	}
	d, err := c.DescribeWorkflowExecution(ctx, workflows.OrderWorkflowID(id), "")
	if err != nil {
		return b.String() + "  describe: " + err.Error()
	}
	fmt.Fprintf(&b, "  workflow %s, %d history events\n", d.GetWorkflowExecutionInfo().GetStatus(), d.GetWorkflowExecutionInfo().GetHistoryLength())
	if wt := d.GetPendingWorkflowTask(); wt != nil {
		fmt.Fprintf(&b, "  pending workflow task: %s, attempt %d\n", wt.GetState(), wt.GetAttempt())
	}
	for _, a := range d.GetPendingActivities() {
		fmt.Fprintf(&b, "  pending %s: %s, attempt %d, last failure %q\n", a.GetActivityType().GetName(), a.GetState(),
			a.GetAttempt(), a.GetLastFailure().GetMessage())
	}
	// A workflow task that failed (a panic, a nondeterminism, the SDK's deadlock detector): the server then
	// refuses updates ("Workflow Task in failed state"); its first failure is in the history.
	for it := c.GetWorkflowHistory(ctx, workflows.OrderWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		ev, err := it.Next()
		if err != nil {
			fmt.Fprintf(&b, "  history: %v\n", err)
			break
		}
		if f := ev.GetWorkflowTaskFailedEventAttributes(); f != nil {
			fmt.Fprintf(&b, "  workflow task failed (event %d): %s: %s\n", ev.GetEventId(), f.GetCause(), f.GetFailure().GetMessage())
		}
	}
	return b.String()
}
