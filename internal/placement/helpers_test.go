package placement_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/sagatest"
)

// env is a place-order service over an in-process Temporal server, a worker and the test's stores.
type env struct {
	*sagatest.Env
	t      *testing.T
	svc    *placement.Service
	places *counter // Update-with-Start calls of this service
	// inFlight and waiting are the service's gauges of its Update-with-Start calls in flight and of the
	// placements waiting for one.
	inFlight, waiting *gauge
	// Gate is the service's admission gate (one per process, as in production).
	Gate *admission.Gate
}

// counter is a placement.Counter.
type counter struct{ n atomic.Int64 }

func (c *counter) Inc()         { c.n.Add(1) }
func (c *counter) value() int64 { return c.n.Load() }

// gauge is a placement.Gauge.
type gauge struct{ n atomic.Int64 }

func (g *gauge) Add(d float64) { g.n.Add(int64(d)) }
func (g *gauge) value() int64  { return g.n.Load() }

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
	places, inFlight, waiting := &counter{}, &gauge{}, &gauge{}
	gate := admission.New(se.Redis)
	cfg := placement.Config{
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Temporal: se.Client, Store: se.Store, Stock: gate,
		Currency: "CNY", PaymentTimeout: time.Minute,
		// Generous: under -race on a loaded machine a reservation can take far longer than in production.
		PlaceTimeout: 2 * time.Minute,
		KeepAs:       keepAs, Places: places, InFlight: inFlight, Waiting: waiting,
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
	return &env{Env: se, t: t, svc: svc, places: places, inFlight: inFlight, waiting: waiting, Gate: gate}
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

// noKey fails the test when the key has a row: nothing was claimed, so no order ID exists and no workflow
// can have been started for it.
func (e *env) noKey(t testing.TB, user, key, why string) {
	t.Helper()
	if id := e.KeyOrderID(t, user, key); id != "" {
		t.Errorf("%s: the key %s of %s was claimed (order %s)", why, key, user, id)
	}
}

func (e *env) countRows(table, where string, args ...any) int64 {
	e.t.Helper()
	return e.CountRows(e.t, table, where, args...)
}

func (e *env) countWorkflows(query string, want int64) int64 {
	e.t.Helper()
	return e.CountWorkflows(e.t, query, want)
}

// atOnce runs place(0) … place(n-1), each in its own goroutine, released together, and returns their outcomes.
func atOnce(n int, place func(i int) placement.Outcome) []placement.Outcome {
	outs := make([]placement.Outcome, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range outs {
		wg.Go(func() {
			<-start
			outs[i] = place(i)
		})
	}
	close(start)
	wg.Wait()
	return outs
}

// admitOther counts line's units in the admission gate as another request's placement would (admitted for real:
// a count without a live process behind it is reaped); the caller hands them back with Done.
func (e *env) admitOther(t *testing.T, line ordersaga.Line) *admission.Admission {
	t.Helper()
	adm, turn, err := e.Gate.Admit(context.Background(), admission.Ticket{}, []ordersaga.Line{line}, nil, time.Minute)
	if err != nil || adm == nil {
		t.Fatalf("admit another placement: %+v %v", turn, err)
	}
	return adm
}
