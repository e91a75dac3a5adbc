package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

var recordRelease = flag.String("record-release", "",
	"record one history of every path into workflows/testdata/histories/<YYYY-MM-DD>-<commit> (a new directory; see workflows/doc.go)")

// releaseName is the commit date and short hash of the release: names sort in release order, which
// TestReleaseHistoriesComplete in workflows relies on.
var releaseName = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9a-f]{7,40}$`)

// TestRecordRelease records, with the code checked out, one history of each path an order (and the refund
// and reconcile workflows) takes, for workflows.TestReplay to replay against every later release. Released
// histories are immutable: it refuses a directory that exists, and writes nothing unless every path recorded.
func TestRecordRelease(t *testing.T) {
	if *recordRelease == "" {
		t.Skip("set -record-release=<YYYY-MM-DD>-<commit> to record a release's histories")
	}
	if !releaseName.MatchString(*recordRelease) {
		t.Fatalf("-record-release=%q: want <commit date YYYY-MM-DD>-<short commit>, e.g. 2026-12-01-bda7db0", *recordRelease)
	}
	root := filepath.Join("..", "..", "workflows", "testdata", "histories")
	dir := filepath.Join(root, *recordRelease)
	switch _, err := os.Stat(dir); {
	case err == nil:
		t.Fatalf("%s exists: a release's histories are never re-recorded", dir)
	case !errors.Is(err, os.ErrNotExist):
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, ".recording-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	r := startRecorder(t, tmp)
	t.Run("orders", func(t *testing.T) {
		for _, sc := range orderScenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, r, sc.name)
			})
		}
	})
	// Reconciliation last, when no order is in flight: its pages then see every SKU above settled.
	t.Run("reconcile", func(t *testing.T) { recordReconcile(t, r, "reconcile") })
	if t.Failed() {
		t.Fatalf("nothing written to %s", dir)
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded release %s", dir)
}

// recorder is a saga on the in-process Temporal server with the test's stores, whose worker can hold an
// activity (gate) so a test can deliver a message while the workflow waits on it.
type recorder struct {
	c     client.Client
	store *sqlstore.Store
	redis *redisstock.Store
	gate  *gate
	dir   string
}

func startRecorder(t *testing.T, dir string) *recorder {
	t.Helper()
	g := newGate()
	env := sagatest.StartOn(t, testenv.MustOpenStore(t), testenv.MustOpenRedis(t), func(o *worker.Options) {
		o.Interceptors = []interceptor.WorkerInterceptor{g}
	})
	return &recorder{c: env.Client, store: env.Store, redis: env.Redis, gate: g, dir: dir}
}

// stock sets a SKU in the database (db units) and Redis (redis units): equal but for the deduct-rejection path.
func (r *recorder) stock(t *testing.T, sku string, db, redis int64) {
	t.Helper()
	if err := r.store.SetInventory(context.Background(), sku, db, 1250); err != nil {
		t.Fatal(err)
	}
	if err := r.redis.SetAvailable(context.Background(), sku, redis); err != nil {
		t.Fatal(err)
	}
}

// order places an order of one unit of each SKU and checks the reservation's status.
func (r *recorder) order(t *testing.T, name string, timeout time.Duration, want ordersaga.Status, skus ...string) workflows.Reservation {
	t.Helper()
	in := workflows.OrderInput{OrderID: "rec-" + name, UserID: "u-rec", Currency: "CNY", PaymentTimeout: timeout}
	for _, sku := range skus {
		in.Lines = append(in.Lines, ordersaga.Line{SKU: sku, Qty: 1})
	}
	res, err := place(ctxT(t), r.c, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Order.Status != want {
		t.Fatalf("order %s reserved as %s, want %s: %+v", in.OrderID, res.Order.Status, want, res)
	}
	return res
}

// finish waits for the workflow's result, checks its status and writes its history as name.json.
func (r *recorder) finish(t *testing.T, name string, want ordersaga.Status) *historypb.History {
	t.Helper()
	id := workflows.OrderWorkflowID("rec-" + name)
	var o ordersaga.Order
	if err := r.c.GetWorkflow(ctxT(t), id, "").Get(ctxT(t), &o); err != nil {
		t.Fatalf("order %s: %v", id, err)
	}
	if o.Status != want {
		t.Fatalf("order %s ended %s (%s), want %s", id, o.Status, o.ClosedReason, want)
	}
	return r.write(t, id, name)
}

func (r *recorder) write(t *testing.T, workflowID, name string) *historypb.History {
	t.Helper()
	iter := r.c.GetWorkflowHistory(ctxT(t), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s.json (%d events) from %s", name, len(hist.Events), workflowID)
	return hist
}

// activitiesScheduled counts the history's (non-local) activities of a type.
func activitiesScheduled(h *historypb.History, activityType string) int {
	n := 0
	for _, ev := range h.Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activityType {
			n++
		}
	}
	return n
}

// eventsOf counts the history's events of a type.
func eventsOf(h *historypb.History, typ enumspb.EventType) int {
	n := 0
	for _, ev := range h.Events {
		if ev.GetEventType() == typ {
			n++
		}
	}
	return n
}

func (r *recorder) signal(t *testing.T, name, signal string, arg any) {
	t.Helper()
	if err := r.c.SignalWorkflow(ctxT(t), workflows.OrderWorkflowID("rec-"+name), "", signal, arg); err != nil {
		t.Fatal(err)
	}
}

func (r *recorder) pay(t *testing.T, name string, p workflows.PaymentSignal, want ordersaga.PaymentResult) {
	t.Helper()
	got, err := orderclient.Pay(ctxT(t), r.c, "rec-"+name, p)
	if err != nil || got != want {
		t.Fatalf("pay %s %+v: %q %v, want %q", name, p, got, err, want)
	}
}

// payAccepted sends the pay update and returns once the workflow accepted it, before its answer.
func (r *recorder) payAccepted(t *testing.T, name string, p workflows.PaymentSignal) client.WorkflowUpdateHandle {
	t.Helper()
	h, err := r.c.UpdateWorkflow(ctxT(t), client.UpdateWorkflowOptions{
		WorkflowID: workflows.OrderWorkflowID("rec-" + name), UpdateName: workflows.UpdatePay,
		Args: []any{p}, WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		t.Fatalf("pay %s %+v: %v", name, p, err)
	}
	return h
}

func answer(t *testing.T, h client.WorkflowUpdateHandle, want ordersaga.PaymentResult) {
	t.Helper()
	var got ordersaga.PaymentResult
	if err := h.Get(ctxT(t), &got); err != nil || got != want {
		t.Fatalf("update %s: %q %v, want %q", h.UpdateID(), got, err, want)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

const (
	longWait  = 10 * time.Minute // the order acts long before its deadline
	shortWait = 2 * time.Second  // the deadline is the path
)

type scenario struct {
	name string
	run  func(t *testing.T, r *recorder, name string)
}

// orderScenarios are the paths of an order; each name is a file in the release directory and an entry of
// requiredHistories in workflows/replay_test.go. Each scenario owns its SKUs and order ID.
var orderScenarios = []scenario{
	{"paid", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-PAID", 5, 5)
		res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-PAID")
		r.signal(t, name, workflows.SignalPayment, workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"})
		r.finish(t, name, ordersaga.StatusPaid)
	}},
	{"paid_update", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-PAIDU", 5, 5)
		res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-PAIDU")
		r.pay(t, name, workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"}, ordersaga.PaymentApplied)
		r.finish(t, name, ordersaga.StatusPaid)
	}},
	{"expired", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-EXP", 5, 5)
		r.order(t, name, shortWait, ordersaga.StatusAwaitingPayment, "REC-EXP")
		r.finish(t, name, ordersaga.StatusExpired)
	}},
	{"sold_out", func(t *testing.T, r *recorder, name string) {
		// Two lines, the second sold out in Redis: the first's hold is released.
		r.stock(t, "REC-SO-A", 5, 5)
		r.stock(t, "REC-SO-B", 0, 0)
		res := r.order(t, name, longWait, ordersaga.StatusRejected, "REC-SO-A", "REC-SO-B")
		if res.SoldOutSKU != "REC-SO-B" {
			t.Fatalf("sold-out SKU %q, want REC-SO-B", res.SoldOutSKU)
		}
		h := r.finish(t, name, ordersaga.StatusRejected)
		if n := activitiesScheduled(h, "RestoreOrder"); n != 0 {
			t.Fatalf("a reserve rejection restored the database (%d RestoreOrder)", n)
		}
	}},
	{"rejected_deduct", func(t *testing.T, r *recorder, name string) {
		// Redis holds units the database no longer has: the reserve passes, the deduct refuses.
		r.stock(t, "REC-DED", 0, 5)
		res := r.order(t, name, longWait, ordersaga.StatusRejected, "REC-DED")
		if res.SoldOutSKU != "REC-DED" {
			t.Fatalf("sold-out SKU %q, want REC-DED", res.SoldOutSKU)
		}
		h := r.finish(t, name, ordersaga.StatusRejected)
		if activitiesScheduled(h, "RestoreOrder") != 1 {
			t.Fatal("a deduct rejection did not restore the database")
		}
	}},
	{"cancelled_signal", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-CANS", 5, 5)
		r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-CANS")
		r.signal(t, name, workflows.SignalCancel, workflows.CancelSignal{Reason: "changed my mind"})
		r.finish(t, name, ordersaga.StatusCancelled)
	}},
	{"cancelled_update", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-CANU", 5, 5)
		r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-CANU")
		o, err := orderclient.Cancel(ctxT(t), r.c, "rec-"+name, "changed my mind")
		if err != nil || o.Status != ordersaga.StatusCancelled {
			t.Fatalf("cancel: %v %v", o.Status, err)
		}
		r.finish(t, name, ordersaga.StatusCancelled)
	}},
	{"wrong_amount_expired", func(t *testing.T, r *recorder, name string) {
		r.stock(t, "REC-WRONG", 5, 5)
		res := r.order(t, name, shortWait, ordersaga.StatusAwaitingPayment, "REC-WRONG")
		p := workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents - 1, Currency: "CNY"}
		r.pay(t, name, p, ordersaga.PaymentRejectedAmount)
		r.finish(t, name, ordersaga.StatusExpired)
	}},
	{"late_payment_refunded", func(t *testing.T, r *recorder, name string) {
		// The payment arrives while the cancelled order restores the database: the loop is over, so it is
		// refunded once compensation and the record are done.
		r.stock(t, "REC-LATE", 5, 5)
		res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-LATE")
		release := r.gate.hold(t, workflows.OrderWorkflowID("rec-"+name), "RestoreOrder")
		r.signal(t, name, workflows.SignalCancel, workflows.CancelSignal{})
		release.reached(t)
		h := r.payAccepted(t, name, workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"})
		release.open()
		answer(t, h, ordersaga.PaymentRefunded)
		r.finish(t, name, ordersaga.StatusCancelled)
	}},
	{"duplicate_payment", func(t *testing.T, r *recorder, name string) {
		// The provider redelivers the event while the first delivery is being applied, as a signal and as
		// an update: it is applied once.
		r.stock(t, "REC-DUP", 5, 5)
		res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-DUP")
		p := workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"}
		release := r.gate.hold(t, workflows.OrderWorkflowID("rec-"+name), "MarkPaid")
		first := r.payAccepted(t, name, p)
		release.reached(t)
		r.signal(t, name, workflows.SignalPayment, p)
		second := r.payAccepted(t, name, p)
		release.open()
		answer(t, first, ordersaga.PaymentApplied)
		answer(t, second, ordersaga.PaymentApplied)
		hist := r.finish(t, name, ordersaga.StatusPaid)
		if n := activitiesScheduled(hist, "MarkPaid"); n != 1 {
			t.Fatalf("the event was applied %d times", n)
		}
	}},
	{"cancel_requested", func(t *testing.T, r *recorder, name string) {
		// An operator's Temporal cancel request (temporal workflow cancel) while the order awaits payment.
		r.stock(t, "REC-CANR", 5, 5)
		r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-CANR")
		if err := r.c.CancelWorkflow(ctxT(t), workflows.OrderWorkflowID("rec-"+name), ""); err != nil {
			t.Fatal(err)
		}
		h := r.finish(t, name, ordersaga.StatusCancelled)
		if n := eventsOf(h, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED); n != 1 {
			t.Fatalf("%d cancel requests in the history, want 1", n)
		}
	}},
	{"mark_paid_refused", func(t *testing.T, r *recorder, name string) {
		// The event was already recorded for another order (refunded), so the database refuses to apply it
		// here: it is recorded as refunded (the record already there) and the order keeps waiting, then a
		// second event pays it.
		r.stock(t, "REC-MPR", 5, 5)
		res := r.order(t, name, longWait, ordersaga.StatusAwaitingPayment, "REC-MPR")
		refused := workflows.PaymentSignal{EventID: "evt-" + name, AmountCents: res.Order.AmountCents, Currency: "CNY"}
		if _, _, err := r.store.RecordPayment(ctxT(t), ordersaga.PaymentRecord{EventID: refused.EventID, OrderID: "rec-" + name + "-other",
			AmountCents: refused.AmountCents, Currency: "CNY", Result: ordersaga.PaymentRefunded, Detail: "recorded first for another order"}); err != nil {
			t.Fatal(err)
		}
		r.pay(t, name, refused, ordersaga.PaymentRefunded)
		r.pay(t, name, workflows.PaymentSignal{EventID: "evt-" + name + "-2", AmountCents: res.Order.AmountCents, Currency: "CNY"}, ordersaga.PaymentApplied)
		h := r.finish(t, name, ordersaga.StatusPaid)
		if n := activitiesScheduled(h, "MarkPaid"); n != 2 {
			t.Fatalf("%d MarkPaid, want the refused one and the applied one", n)
		}
	}},
	{"limit_rejected", func(t *testing.T, r *recorder, name string) {
		// Two units of a SKU whose per-user limit is 1: the reserve refuses the line.
		const sku = "REC-LIMIT"
		if _, err := r.store.SetInventoryLocked(ctxT(t), sqlstore.InventorySpec{SKU: sku, Stock: 5, PriceCents: 1250, PerUserLimit: 1},
			func(*sqlstore.Locked, int64) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := r.redis.SetAvailable(ctxT(t), sku, 5); err != nil {
			t.Fatal(err)
		}
		if err := r.redis.SetLimit(ctxT(t), sku, 1); err != nil {
			t.Fatal(err)
		}
		in := workflows.OrderInput{OrderID: "rec-" + name, UserID: "u-rec", Currency: "CNY", PaymentTimeout: longWait,
			Lines: []ordersaga.Line{{SKU: sku, Qty: 2}}}
		res, err := place(ctxT(t), r.c, in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Order.Status != ordersaga.StatusRejected || res.LimitExceeded == nil || res.LimitExceeded.SKU != sku {
			t.Fatalf("order %s: %+v, want rejected over the limit of %s", in.OrderID, res, sku)
		}
		r.finish(t, name, ordersaga.StatusRejected)
	}},
	{"unknown_sku_rejected", func(t *testing.T, r *recorder, name string) {
		// A SKU neither Redis nor the database knows: the reserve's cold load finds none and refuses the line.
		res := r.order(t, name, longWait, ordersaga.StatusRejected, "REC-NO-SUCH-SKU")
		if res.UnknownSKU != "REC-NO-SUCH-SKU" {
			t.Fatalf("unknown SKU %q, want REC-NO-SUCH-SKU", res.UnknownSKU)
		}
		r.finish(t, name, ordersaga.StatusRejected)
	}},
	{"refund", func(t *testing.T, r *recorder, name string) {
		// A payment for an order Temporal does not know: the webhook starts RefundWorkflow.
		p := ordersaga.PaymentRecord{EventID: "evt-" + name, OrderID: "rec-unknown", AmountCents: 1250, Currency: "CNY"}
		id := workflows.RefundWorkflowID(p.EventID)
		run, err := r.c.ExecuteWorkflow(ctxT(t), client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue}, workflows.RefundWorkflow, p)
		if err != nil {
			t.Fatal(err)
		}
		var rec ordersaga.PaymentRecord
		if err := run.Get(ctxT(t), &rec); err != nil || rec.Result != ordersaga.PaymentRefunded {
			t.Fatalf("refund: %+v %v", rec, err)
		}
		r.write(t, id, name)
	}},
}

// recordReconcile runs one reconciliation in pages of two SKUs, so the history has several pages of each kind.
func recordReconcile(t *testing.T, r *recorder, name string) {
	id, _, err := platform.RunOnce(ctxT(t), r.c, workflows.ReconcileInput{BatchSize: 2, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, id, name)
}

// gate holds chosen activities of chosen workflows until the test opens them: a message sent meanwhile is
// in the history while the workflow waits on that activity.
type gate struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	holds map[gateKey]*held
}

type gateKey struct{ workflowID, activityType string }

type held struct {
	in, out         chan struct{}
	inOnce, outOnce sync.Once
}

func newGate() *gate { return &gate{holds: map[gateKey]*held{}} }

// hold makes the next attempts of the activity wait until open; the test's cleanup opens it.
func (g *gate) hold(t *testing.T, workflowID, activityType string) *held {
	h := &held{in: make(chan struct{}), out: make(chan struct{})}
	g.mu.Lock()
	g.holds[gateKey{workflowID, activityType}] = h
	g.mu.Unlock()
	t.Cleanup(h.open)
	return h
}

// reached waits until an attempt of the held activity is waiting.
func (h *held) reached(t *testing.T) {
	t.Helper()
	select {
	case <-h.in:
	case <-time.After(time.Minute):
		t.Fatal("the held activity never started")
	}
}

func (h *held) open() { h.outOnce.Do(func() { close(h.out) }) }

func (g *gate) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &gatedActivity{g: g}
	a.Next = next
	return a
}

type gatedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	g *gate
}

func (a *gatedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	a.g.mu.Lock()
	h := a.g.holds[gateKey{info.WorkflowExecution.ID, info.ActivityType.Name}]
	a.g.mu.Unlock()
	if h != nil {
		h.inOnce.Do(func() { close(h.in) })
		select {
		case <-h.out:
		case <-ctx.Done():
			return nil, fmt.Errorf("held %s: %w", info.ActivityType.Name, ctx.Err())
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}
