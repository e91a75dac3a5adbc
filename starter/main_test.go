package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// stack is what run() talks to in a test: the in-process Temporal server (no worker until the test starts
// one), the test's database and Redis, and the environment that points run() at them.
type stack struct {
	srv    *temporaltest.TestServer
	env    map[string]string
	dsn    string // MySQL, or "" for SQLite at sqlite
	sqlite string
	rdb    redis.UniversalClient
	prefix string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{srv: sagatest.NewServer(t)}
	s.rdb, s.prefix = testenv.RedisClient(t)
	s.env = map[string]string{
		"HTTP_ADDR":              freeAddr(t),
		"TEMPORAL_ADDRESS":       s.srv.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE":     s.srv.GetDefaultNamespace(),
		"REDIS_ADDR":             s.rdb.(*redis.Client).Options().Addr,
		"REDIS_KEY_PREFIX":       s.prefix,
		"PAYMENT_WEBHOOK_SECRET": "whsec-starter-test",
		"ADMIN_TOKEN":            "admin-starter-test",
		"LOG_FORMAT":             "text",
		"LOG_LEVEL":              "warn",
	}
	if testenv.RealMySQL() {
		s.dsn = testenv.MySQLDatabase(t)
		s.env["MYSQL_DSN"] = s.dsn
	} else {
		s.sqlite = filepath.Join(t.TempDir(), "starter.db")
		s.env["SQLITE_PATH"] = s.sqlite
	}
	return s
}

func (s *stack) getenv(k string) string { return s.env[k] }

func (s *stack) url(path string) string { return "http://" + s.env["HTTP_ADDR"] + path }

// startWorker starts the order worker on the stack's stores.
func (s *stack) startWorker(t *testing.T) {
	t.Helper()
	store, err := sqlstore.Open(context.Background(), s.dsn, s.sqlite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acts := &activities.Activities{Store: store, Redis: redisstock.New(s.rdb, s.prefix, 0)}
	s.srv.NewWorker(workflows.TaskQueue, func(r worker.Registry) { workflows.Register(r, acts) })
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startRun runs the starter until the returned cancel is called; wait returns run's error.
func startRun(t *testing.T, s *stack) (cancel context.CancelFunc, wait func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"starter"}, s.getenv, io.Discard) }()
	t.Cleanup(cancel)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.url("/healthz"))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-errc:
			t.Fatalf("run returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the starter did not answer /healthz within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cancel, func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(time.Minute):
			return errors.New("run did not return within a minute of the shutdown")
		}
	}
}

func call(t *testing.T, method, url string, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestRun_GracefulShutdownDrainsRequestsInFlight: an order placed while no worker runs is still waiting for
// its reservation when the starter is told to stop; it completes with 201 once a worker picks it up, and
// run returns without error. Meanwhile /metrics has carried the Temporal SDK's metrics.
func TestRun_GracefulShutdownDrainsRequestsInFlight(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	stop, wait := startRun(t, s)

	admin := map[string]string{"Authorization": "Bearer " + s.env["ADMIN_TOKEN"]}
	if code, body := call(t, http.MethodPut, s.url("/v1/inventory/GS-1"), `{"stock":10,"price_cents":300}`, admin); code != http.StatusOK {
		t.Fatalf("PUT inventory: %d %s", code, body)
	}
	if code, body := call(t, http.MethodGet, s.url("/readyz"), "", nil); code != http.StatusOK {
		t.Fatalf("readyz: %d %s", code, body)
	}
	if _, err := s.srv.GetDefaultClient().ScheduleClient().GetHandle(context.Background(), workflows.ReconcileScheduleID).
		Describe(context.Background()); err != nil {
		t.Errorf("the reconciliation schedule was not ensured at boot: %v", err)
	}
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, metrics = call(t, http.MethodGet, s.url("/metrics"), "", nil); strings.Contains(metrics, "temporal_request") {
			break
		}
	}
	for _, want := range []string{"temporal_request", "ordersaga_http_requests_total", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url("/v1/orders"), strings.NewReader(`{"user_id":"u-gs","lines":[{"sku":"GS-1","qty":2}]}`))
		req.Header.Set("Idempotency-Key", "k-graceful")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		answered <- answer{code: res.StatusCode, body: string(b)}
	}()
	// The request is in flight once its workflow exists (it waits there: no worker yet).
	store, err := sqlstore.Open(context.Background(), s.dsn, s.sqlite)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := s.srv.GetDefaultClient()
	var orderID string // from the key's row: order IDs derive from its nonce
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec, err := store.IdempotencyKey(context.Background(), "u-gs", "k-graceful")
		if err == nil {
			orderID = rec.OrderID
			if _, err := c.DescribeWorkflowExecution(context.Background(), workflows.OrderWorkflowID(orderID), ""); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the order's workflow was not started")
		}
	}

	stop() // as SIGTERM does
	// New connections are refused once the listener is closed...
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", s.env["HTTP_ADDR"], 100*time.Millisecond)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections 5s after the shutdown began")
		}
	}
	// ...while the request in flight still gets its answer once a worker decides the reservation.
	select {
	case a := <-answered:
		t.Fatalf("the request in flight was answered before any worker ran: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	s.startWorker(t)
	a := <-answered
	if a.err != nil || a.code != http.StatusCreated || !strings.Contains(a.body, orderID) {
		t.Errorf("request in flight: %+v, want 201 with %s", a, orderID)
	}
	if err := wait(); err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestRun_MissingSecretsFailNamingTheVariable: outside the local stack there is no default secret or token;
// every configuration error names its variable before anything is dialled.
func TestRun_MissingSecretsFailNamingTheVariable(t *testing.T) {
	t.Parallel()
	bad := map[string]string{ // a bad value, not a missing one
		"RECONCILE_INTERVAL": "often", "CALLER_IDENTITY": "jwt", "CALLER_TOKEN_SECRET": "short",
	}
	for _, name := range []string{"PAYMENT_WEBHOOK_SECRET", "ADMIN_TOKEN", "REDIS_ADDR", "RECONCILE_INTERVAL", "CALLER_IDENTITY", "CALLER_TOKEN_SECRET"} {
		env := map[string]string{
			"PAYMENT_WEBHOOK_SECRET": "x", "ADMIN_TOKEN": "y", "REDIS_ADDR": "127.0.0.1:1",
			"SQLITE_PATH": filepath.Join(t.TempDir(), "x.db"), "RECONCILE_INTERVAL": "1m",
		}
		if name == "CALLER_TOKEN_SECRET" {
			env["CALLER_IDENTITY"] = "bearer-hs256"
		}
		if v, ok := bad[name]; ok {
			env[name] = v
		} else {
			delete(env, name)
		}
		var out bytes.Buffer
		err := run(context.Background(), nil, func(k string) string { return env[k] }, &out)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: run = %v, want an error naming it", name, err)
		}
	}
}

// TestRun_AdminAddrServesMetricsAndDetailApart: with ADMIN_ADDR set, /metrics (the API's, the Temporal SDK's)
// and the detailed /readyz are on the admin listener; the API answers /metrics 404 and its /readyz says
// ready and nothing of the dependencies.
func TestRun_AdminAddrServesMetricsAndDetailApart(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.env["ADMIN_ADDR"] = freeAddr(t)
	adminURL := func(path string) string { return "http://" + s.env["ADMIN_ADDR"] + path }
	stop, wait := startRun(t, s)

	if code, body := call(t, http.MethodGet, s.url("/metrics"), "", nil); code != http.StatusNotFound {
		t.Errorf("public /metrics: %d %s, want 404", code, body)
	}
	code, body := call(t, http.MethodGet, s.url("/readyz"), "", nil)
	if code != http.StatusOK || strings.TrimSpace(body) != `{"status":"ready"}` {
		t.Errorf("public /readyz: %d %s, want 200 {\"status\":\"ready\"} alone", code, body)
	}
	if code, body := call(t, http.MethodGet, adminURL("/readyz"), "", nil); code != http.StatusOK ||
		!strings.Contains(body, `"temporal":"ok"`) || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("admin /readyz: %d %s, want 200 with each check", code, body)
	}
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, metrics = call(t, http.MethodGet, adminURL("/metrics"), "", nil); strings.Contains(metrics, "temporal_request") {
			break
		}
	}
	for _, want := range []string{`ordersaga_http_requests_total{code="404",route="unmatched"}`, "ordersaga_http_requests_total{code=\"200\",route=\"GET /readyz\"}", "temporal_request", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("admin /metrics lacks %s", want)
		}
	}
	stop()
	if err := wait(); err != nil {
		t.Errorf("run: %v", err)
	}
}
