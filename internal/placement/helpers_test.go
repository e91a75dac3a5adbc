package placement_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// env is a place-order service over an in-process Temporal server, a worker and the test's stores.
type env struct {
	*sagatest.Env
	t      *testing.T
	svc    *placement.Service
	places *counter // Update-with-Start calls of this service
	// Gate is the service's admission gate (one per process, as in production).
	Gate *admission.Gate
}

// counter is a placement.Counter.
type counter struct{ n atomic.Int64 }

func (c *counter) Inc()         { c.n.Add(1) }
func (c *counter) value() int64 { return c.n.Load() }

// keepAs is the tests' first answer of a reserved order: 201 and the order as JSON, as the API keeps it.
func keepAs(o ordersaga.Order) placement.Answer {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return placement.Answer{Status: http.StatusCreated, Body: b}
}

// newEnv starts a saga and a service on it; change lets a test adjust the service's configuration.
func newEnv(t *testing.T, change ...func(*placement.Config)) *env {
	t.Helper()
	return serviceOn(t, sagatest.Start(t), change...)
}

// serviceOn starts one more service on a running saga (as one more API process), with its background work
// run as a process runs it: the markers' backfill started at once, and stopped at the end of the test.
func serviceOn(t *testing.T, se *sagatest.Env, change ...func(*placement.Config)) *env {
	t.Helper()
	places := &counter{}
	gate := admission.New(se.Redis)
	cfg := placement.Config{
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Temporal: se.Client, Store: se.Store, Stock: gate,
		Currency: "CNY", PaymentTimeout: time.Minute,
		// Generous: under -race on a loaded machine a reservation can take far longer than in production.
		PlaceTimeout: 2 * time.Minute,
		KeepAs:       keepAs, Places: places,
	}
	for _, c := range change {
		c(&cfg)
	}
	svc := placement.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = svc.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	svc.Backfill()
	return &env{Env: se, t: t, svc: svc, places: places, Gate: gate}
}

// place places an order of user with key; an error fails the test.
func (e *env) place(key, user string, lines ...ordersaga.Line) placement.Outcome {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := e.svc.Place(ctx, placement.Request{UserID: user, Key: key, Lines: lines})
	if err != nil {
		e.t.Fatalf("place %s of %s: %v", key, user, err)
	}
	return out
}

// want fails the test unless out is of kind.
func want(t testing.TB, out placement.Outcome, kind placement.Kind) placement.Outcome {
	t.Helper()
	if out.Kind != kind {
		t.Fatalf("outcome %s %+v, want %s", out.Kind, out, kind)
	}
	return out
}

// countRows counts the rows of a table matching a condition.
func (e *env) countRows(table, where string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.Store.DB().Raw("SELECT COUNT(*) FROM "+table+" WHERE "+where, args...).Scan(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

// countWorkflows counts the executions matching a visibility query, waiting for visibility to settle on
// want (it is eventually consistent); it returns the last count seen.
func (e *env) countWorkflows(query string, want int64) int64 {
	e.t.Helper()
	var got int64 = -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		res, err := e.Client.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil {
			e.t.Fatal(err)
		}
		if got = res.GetCount(); got == want {
			return got
		}
	}
	return got
}

// noWorkflow fails the test when the order has a workflow.
func (e *env) noWorkflow(t testing.TB, orderID, why string) {
	t.Helper()
	_, err := e.Client.DescribeWorkflowExecution(context.Background(), workflows.OrderWorkflowID(orderID), "")
	var nf *serviceerror.NotFound
	if !errors.As(err, &nf) {
		t.Errorf("%s: the order %s has a workflow (%v)", why, orderID, err)
	}
}

// deleteKeys deletes the keys matching each pattern and returns how many it deleted.
func deleteKeys(t *testing.T, rdb redis.UniversalClient, patterns ...string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, pattern := range patterns {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		n += len(keys)
	}
	return n
}

// deadTemporal is a client of a Temporal frontend that does not exist.
func deadTemporal(t testing.TB) client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.NewLazyClient(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// deadStore is a database layer whose connections are closed.
func deadStore(t testing.TB) placement.Store {
	t.Helper()
	s := testenv.MustOpenStore(t)
	s.Close()
	return s
}
