package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestPlaceOrder_AReservationFailingOnARawErrorAnswersItsKindOnly: a reservation that fails on a store error
// carrying how the database is reached (a user and a host) or SQL text answers 503 stock-unavailable with
// the failure's kind, and closes the order with a closed_reason that holds the kind only; the worker's log
// has the whole error. The worker's database fails every statement until healed: on a real MySQL server
// (MYSQL_DSN) it connects as a user dropped since, so the server answers "Access denied for user
// '<user>'@'<host>'"; on SQLite its inventory table is gone ("no such table: inventory"). The SKU is not
// loaded in Redis, so the reserve's cold load asks that database and fails retryably until the reserve's
// schedule-to-close bound (30 s) rejects the order.
func TestPlaceOrder_AReservationFailingOnARawErrorAnswersItsKindOnly(t *testing.T) {
	t.Parallel()
	const sku = "SKU-RAW"
	apiStore, workerStore, secrets, heal := failingWorkerStore(t, testenv.Item{SKU: sku, Stock: 5, Price: 250})
	logs := &logCapture{}
	env := sagatest.StartOn(t, workerStore, testenv.MustOpenRedis(t), func(o *worker.Options) {
		o.Interceptors = append(o.Interceptors, logs)
	})
	a := serveAPI(t, env, func(d *api.Deps) { d.Store = apiStore })

	begin := time.Now()
	r := a.place("raw-1", orderBody("u-raw", ordersaga.Line{SKU: sku, Qty: 1}))
	t.Logf("answered after %v: %s", time.Since(begin).Round(time.Millisecond), r)
	p := r.wantProblem(t, http.StatusServiceUnavailable, "stock-unavailable")
	noSecrets(t, "the 503 body", string(r.body), secrets)

	// The worker's database is back: the compensation and the record go through, and closed_reason is kept.
	heal()
	var closed string
	for deadline := time.Now().Add(90 * time.Second); ; {
		rec, err := workerStore.Order(t.Context(), p.OrderID)
		if err == nil && rec.Status == ordersaga.StatusRejected {
			closed = rec.ClosedReason
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("order %s not recorded REJECTED after the database came back: %+v, %v", p.OrderID, rec, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("closed_reason %q", closed)
	noSecrets(t, "closed_reason", closed, secrets)
	if reason, ok := ordersaga.ParseRejectReason(closed); !ok || reason.Kind != ordersaga.RejectFailed || reason.Failure == "" {
		t.Errorf("closed_reason %q, want a reservation failure with its kind", closed)
	}
	if !strings.Contains(p.Detail, closed) {
		t.Errorf("503 detail %q does not carry the closed_reason %q", p.Detail, closed)
	}
	// The whole error is in the worker's log: each failing attempt of the reserve (a local activity) is logged
	// with the store's own words (usually the refused user, but on a loaded machine a dial that timed out,
	// which names the host). The workflow's own line has the last attempt's error, which is the deadline's when
	// the reserve's 30 s bound cut that attempt short, so the first attempt's line is the one asserted.
	if logged := logs.find(platform.LocalActivityFailed); !carriesAny(logged, secrets) {
		t.Errorf("the worker's log of the reserve's first failing attempt %q carries none of %q: the whole error belongs in the log", logged, secrets)
	}
	if logged := logs.find("reservation failed"); logged == "" {
		t.Errorf("the workflow did not log the reservation's failure")
	}
}

// carriesAny reports whether text carries any of words (case-insensitive).
func carriesAny(text string, words []string) bool {
	for _, w := range words {
		if strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
			return true
		}
	}
	return false
}

// noSecrets fails the test when text carries any of secrets (case-insensitive).
func noSecrets(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(strings.ToLower(text), strings.ToLower(s)) {
			t.Errorf("%s carries %q: %s", what, s, text)
		}
	}
}

// failingWorkerStore returns the API's store, seeded with items, and a store of the worker's on the same data
// whose every statement fails with a raw driver error until heal is called; secrets is what that error gives
// away (secrets[0] is its most telling part).
func failingWorkerStore(t *testing.T, items ...testenv.Item) (apiStore, workerStore *sqlstore.Store, secrets []string, heal func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := func(s *sqlstore.Store) {
		for _, it := range items {
			if err := s.SetInventory(ctx, it.SKU, it.Stock, it.Price); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !testenv.RealMySQL() {
		// Two SQLite files: the API's inventory stays, the worker's goes.
		apiStore, workerStore = testenv.MustOpenStore(t), testenv.MustOpenStore(t)
		seed(apiStore)
		seed(workerStore)
		if err := workerStore.DB().Exec("ALTER TABLE inventory RENAME TO inventory_gone").Error; err != nil {
			t.Fatal(err)
		}
		heal = func() {
			if err := workerStore.DB().Exec("ALTER TABLE inventory_gone RENAME TO inventory").Error; err != nil {
				t.Fatal(err)
			}
		}
		return apiStore, workerStore, []string{"no such table", "inventory", "sql logic", "select", "sqlite"}, heal
	}
	dsn := testenv.MySQLDatabase(t)
	var err error
	if apiStore, err = sqlstore.Open(ctx, dsn, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { apiStore.Close() })
	seed(apiStore)
	workerStore, user, addr, create := droppedUserStore(ctx, t, dsn)
	if _, err := workerStore.Inventory(ctx, items[0].SKU); err == nil || !strings.Contains(err.Error(), user) {
		t.Fatalf("a read as a dropped user: %v, want an error naming %s", err, user)
	} else {
		t.Logf("the worker's database answers: %v", err)
	}
	host, _, _ := strings.Cut(addr, ":")
	return apiStore, workerStore, []string{user, "access denied", "1045", host, "inventory", "select"}, create
}

// logCapture keeps what the workflows and the activities log (through workflow.GetLogger and
// activity.GetLogger), next to the worker's own logger.
type logCapture struct {
	interceptor.WorkerInterceptorBase
	mu    sync.Mutex
	lines []string
}

func (c *logCapture) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &logActivityInbound{c: c}
	i.Next = next
	return i
}

type logActivityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	c *logCapture
}

func (i *logActivityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	o := &logActivityOutbound{c: i.c}
	o.Next = outbound
	return i.Next.Init(o)
}

type logActivityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	c *logCapture
}

func (o *logActivityOutbound) GetLogger(ctx context.Context) log.Logger {
	return teeLogger{next: o.Next.GetLogger(ctx), c: o.c}
}

func (c *logCapture) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &logInbound{c: c}
	i.Next = next
	return i
}

// find returns the first line logged whose message is msg ("" when none).
func (c *logCapture) find(msg string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if strings.HasPrefix(l, msg) {
			return l
		}
	}
	return ""
}

type logInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *logCapture
}

func (i *logInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	o := &logOutbound{c: i.c}
	o.Next = outbound
	return i.Next.Init(o)
}

type logOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *logCapture
}

func (o *logOutbound) GetLogger(ctx workflow.Context) log.Logger {
	return teeLogger{next: o.Next.GetLogger(ctx), c: o.c}
}

// teeLogger logs to next and keeps a line of each message and its key-values.
type teeLogger struct {
	next log.Logger
	c    *logCapture
	with []any
}

func (l teeLogger) keep(msg string, kv []any) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.lines = append(l.c.lines, msg+" "+fmt.Sprint(append(append([]any(nil), l.with...), kv...)...))
}

func (l teeLogger) Debug(msg string, kv ...any) { l.keep(msg, kv); l.next.Debug(msg, kv...) }
func (l teeLogger) Info(msg string, kv ...any)  { l.keep(msg, kv); l.next.Info(msg, kv...) }
func (l teeLogger) Warn(msg string, kv ...any)  { l.keep(msg, kv); l.next.Warn(msg, kv...) }
func (l teeLogger) Error(msg string, kv ...any) { l.keep(msg, kv); l.next.Error(msg, kv...) }

func (l teeLogger) With(kv ...any) log.Logger {
	return teeLogger{next: log.With(l.next, kv...), c: l.c, with: append(append([]any(nil), l.with...), kv...)}
}
