package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

const (
	testSecret   = "whsec-test-current"
	testOldKey   = "whsec-test-previous"
	testAdmin    = "admin-token-for-tests"
	testCurrency = "CNY"
)

// apiEnv is the order API on httptest, over an in-process Temporal server, a worker and the test's stores.
type apiEnv struct {
	*sagatest.Env
	t   *testing.T
	url string
	reg *prometheus.Registry
	// Gate is the server's admission gate (one per process, as in production).
	Gate *admission.Gate
}

// newAPI starts the saga and an API server on it; change lets a test adjust the dependencies.
func newAPI(t *testing.T, change ...func(*api.Deps)) *apiEnv {
	t.Helper()
	env := sagatest.Start(t)
	return serveAPI(t, env, change...)
}

// serveAPI starts one more API server on a running saga.
func serveAPI(t *testing.T, env *sagatest.Env, change ...func(*api.Deps)) *apiEnv {
	t.Helper()
	reg := prometheus.NewRegistry()
	d := api.Deps{
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Temporal: env.Client, Store: env.Store, Redis: env.Redis, Registry: reg,
		Currency: testCurrency, PaymentTimeout: time.Minute,
		WebhookSecrets: []string{testSecret, testOldKey}, AdminToken: testAdmin,
		// Generous waits: under -race on a loaded machine a reservation can take far longer than in production.
		PlaceTimeout: 2 * time.Minute, UpdateTimeout: 2 * time.Minute,
	}
	for _, c := range change {
		c(&d)
	}
	if d.Gate == nil {
		d.Gate = admission.New(d.Redis)
	}
	srv := httptest.NewServer(api.NewServer(d))
	t.Cleanup(srv.Close)
	return &apiEnv{Env: env, t: t, url: srv.URL, reg: reg, Gate: d.Gate}
}

// response is one answer, fully read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

func (r response) order(t testing.TB) ordersaga.Order {
	t.Helper()
	var o ordersaga.Order
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("order body %s: %v", r.body, err)
	}
	return o
}

// problem decodes a problem+json answer and checks its media type and members.
func (r response) problem(t testing.TB) api.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json (body %s)", ct, r.body)
	}
	var p api.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	if p.Status != r.status || p.Title == "" || p.Detail == "" || !strings.HasPrefix(p.Type, api.ProblemTypeBase) {
		t.Errorf("problem %+v: want type under %s, title, detail and status %d", p, api.ProblemTypeBase, r.status)
	}
	return p
}

// wantProblem checks status and problem type (the last element of the type URI).
func (r response) wantProblem(t testing.TB, status int, kind string) api.Problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("got %s, want %d %s", r, status, kind)
	}
	p := r.problem(t)
	if p.Type != api.ProblemTypeBase+kind {
		t.Errorf("problem type %q, want %q", p.Type, api.ProblemTypeBase+kind)
	}
	return p
}

func (e *apiEnv) do(method, path string, body []byte, header map[string]string) response {
	e.t.Helper()
	return doRequest(e.t, method, e.url+path, body, header)
}

func doRequest(t testing.TB, method, url string, body []byte, header map[string]string) response {
	t.Helper()
	r := testenv.Do(t, method, url, body, header)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// place posts an order with an Idempotency-Key.
func (e *apiEnv) place(key, body string) response {
	e.t.Helper()
	return e.do(http.MethodPost, "/v1/orders", []byte(body), map[string]string{"Idempotency-Key": key})
}

func orderBody(user string, lines ...ordersaga.Line) string {
	type line struct {
		SKU string `json:"sku"`
		Qty int64  `json:"qty"`
	}
	ls := make([]line, len(lines))
	for i, l := range lines {
		ls[i] = line{l.SKU, l.Qty}
	}
	b, _ := json.Marshal(map[string]any{"user_id": user, "lines": ls})
	return string(b)
}

// pay posts a payment event signed with secret at signedAt.
func (e *apiEnv) pay(ev api.PaymentEvent, signedAt time.Time, secrets ...string) response {
	e.t.Helper()
	b, _ := json.Marshal(ev)
	return e.do(http.MethodPost, "/v1/payments/webhook", b, map[string]string{webhook.Header: webhook.Sign(signedAt, b, secrets...)})
}

func (e *apiEnv) payAnswer(r response) api.PaymentAnswer {
	e.t.Helper()
	if r.status != http.StatusOK {
		e.t.Fatalf("payment webhook: %s", r)
	}
	var a api.PaymentAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		e.t.Fatalf("payment answer %s: %v", r.body, err)
	}
	return a
}

// counter reads a counter of the API's registry (0 when the series does not exist yet).
func (e *apiEnv) counter(name string, labels ...string) float64 {
	e.t.Helper()
	return testenv.Metric(e.t, e.reg, name, labels...)
}

// deadRedis is a Redis layer whose server does not exist.
func deadRedis(t testing.TB) *redisstock.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return redisstock.New(rdb, "", 0)
}

func (e *apiEnv) countRows(table, where string, args ...any) int64 {
	e.t.Helper()
	return e.CountRows(e.t, table, where, args...)
}

// droppedUserStore opens a store on the MySQL database dsn as a user of its own, then drops the user: every
// statement after dials (no idle connections) and the server answers "Access denied for user
// '<user>'@'<host>'". It returns the store, the user, the server's address, and recreate, which gives the
// user back.
func droppedUserStore(ctx context.Context, t *testing.T, dsn string) (s *sqlstore.Store, user, addr string, recreate func()) {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	user = "leak_" + testenv.RandomID(4)
	recreate = func() {
		for _, q := range []string{
			"CREATE USER '" + user + "'@'%' IDENTIFIED BY 'leak-pass'",
			"GRANT ALL ON " + cfg.DBName + ".* TO '" + user + "'@'%'",
		} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	recreate()
	t.Cleanup(func() { _, _ = admin.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	ucfg := cfg.Clone()
	ucfg.User, ucfg.Passwd = user, "leak-pass"
	if s, err = sqlstore.Open(ctx, ucfg.FormatDSN(), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pool, err := s.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxIdleConns(0) // every statement dials, as the user of the moment
	if _, err := admin.Exec("DROP USER '" + user + "'@'%'"); err != nil {
		t.Fatal(err)
	}
	return s, user, cfg.Addr, recreate
}
