package e2e

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/apiprocess"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestTrace_OneOrderIsOneTraceAcrossTheProcessParts: with tracing on, one order placed through the HTTP API is
// one trace: the request's server span is its root, and under it Update-with-Start, the workflow, the
// reservation (a local activity) with its Redis script, the deduct with its SQL statements, and (the order
// left unpaid) the compensation when the payment deadline passes.
func TestTrace_OneOrderIsOneTraceAcrossTheProcessParts(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	platform.InstallTracerProvider(tp)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	const sku = "SKU-TRACE"
	store := testenv.MustOpenStore(t)
	rdb, prefix := testenv.RedisClient(t)
	redisstock.Trace(rdb)
	if err := store.Trace(); err != nil {
		t.Fatal(err)
	}
	rs := redisstock.New(rdb, prefix, 0)
	if err := store.SetInventory(t.Context(), sku, 10, 1999); err != nil {
		t.Fatal(err)
	}

	srv := sagatest.NewServer(t)
	tracing, err := platform.TemporalInterceptor()
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := srv.NewClientWithOptions(client.Options{Logger: tlog.NewStructuredLogger(logger),
		Interceptors: []interceptor.ClientInterceptor{tracing}})
	if err := platform.RegisterSearchAttributes(t.Context(), c, srv.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	w, err := platform.StartWorker(c, &activities.Activities{Redis: rs, Store: store}, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	h := api.NewServer(api.Deps{Logger: logger, Temporal: c, Store: store, Redis: rs, Registry: prometheus.NewRegistry(),
		Currency: "CNY", PaymentTimeout: 2 * time.Second, WebhookSecrets: []string{"trace-secret"}, AdminToken: "trace-admin"})
	web := httptest.NewServer(apiprocess.Traced(h))
	t.Cleanup(web.Close)

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, web.URL+"/v1/orders",
		bytes.NewBufferString(`{"user_id":"u-trace","lines":[{"sku":"`+sku+`","qty":1}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "trace-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/orders: %d, want 201", resp.StatusCode)
	}

	// The order expires after 2 s; its workflow then compensates and ends, which ends the workflow's span.
	var tree spanTree
	for deadline := time.Now().Add(60 * time.Second); ; {
		tree = newSpanTree(spans.GetSpans(), "POST /v1/orders")
		if tree.has("RunWorkflow:OrderWorkflow") && tree.has("RunActivity:RestoreOrder") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the order's trace did not complete in 60 s; it has:\n%s", tree)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the order's trace:\n%s", tree)

	for _, path := range [][]string{
		{"POST /v1/orders", "UpdateWithStartWorkflow:", "RunWorkflow:OrderWorkflow", "StartActivity:ReserveLine", "RunActivity:ReserveLine", "redis evalsha reserve.lua"},
		{"POST /v1/orders", "UpdateWithStartWorkflow:", "RunWorkflow:OrderWorkflow", "StartActivity:DeductOrder", "RunActivity:DeductOrder", "UPDATE inventory"},
		{"POST /v1/orders", "UpdateWithStartWorkflow:", "RunWorkflow:OrderWorkflow", "StartActivity:RestoreOrder", "RunActivity:RestoreOrder"},
	} {
		if !tree.hasPath(path) {
			t.Errorf("no span path %q in the order's trace", strings.Join(path, " > "))
		}
	}
	if s, ok := tree.find("UPDATE inventory"); ok {
		if q := attr(s, "db.query.text"); !strings.Contains(q, "UPDATE") || strings.Contains(q, "u-trace") {
			t.Errorf("the deduct's UPDATE span carries db.query.text %q: want the statement with placeholders, no values", q)
		}
	}
}

// spanTree is the spans of one trace, by the trace of the first root span named rootName.
type spanTree struct {
	spans    []tracetest.SpanStub
	children map[string][]int // parent span ID -> indexes
	root     int              // -1 when not found
}

func newSpanTree(all tracetest.SpanStubs, rootName string) spanTree {
	t := spanTree{children: map[string][]int{}, root: -1}
	for _, s := range all {
		if s.Name == rootName && !s.Parent.IsValid() {
			for _, o := range all {
				if o.SpanContext.TraceID() == s.SpanContext.TraceID() {
					t.spans = append(t.spans, o)
				}
			}
			break
		}
	}
	for i, s := range t.spans {
		if !s.Parent.IsValid() {
			t.root = i
			continue
		}
		t.children[s.Parent.SpanID().String()] = append(t.children[s.Parent.SpanID().String()], i)
	}
	return t
}

func (t spanTree) has(name string) bool { _, ok := t.find(name); return ok }

func (t spanTree) find(prefix string) (tracetest.SpanStub, bool) {
	for _, s := range t.spans {
		if strings.HasPrefix(s.Name, prefix) {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// hasPath reports whether the tree has a chain of spans, each a descendant of the one before, whose names start
// with path's elements in order (the first is the root).
func (t spanTree) hasPath(path []string) bool {
	if t.root < 0 || !strings.HasPrefix(t.spans[t.root].Name, path[0]) {
		return false
	}
	var walk func(i int, rest []string) bool
	walk = func(i int, rest []string) bool {
		if len(rest) == 0 {
			return true
		}
		for _, c := range t.children[t.spans[i].SpanContext.SpanID().String()] {
			next := rest
			if strings.HasPrefix(t.spans[c].Name, rest[0]) {
				next = rest[1:]
			}
			if walk(c, next) {
				return true
			}
		}
		return false
	}
	return walk(t.root, path[1:])
}

func (t spanTree) String() string {
	var b strings.Builder
	var walk func(i, depth int)
	walk = func(i, depth int) {
		s := t.spans[i]
		b.WriteString(strings.Repeat("  ", depth) + s.Name + " (" + s.EndTime.Sub(s.StartTime).Round(time.Microsecond).String() + ")\n")
		for _, c := range t.children[s.SpanContext.SpanID().String()] {
			walk(c, depth+1)
		}
	}
	if t.root >= 0 {
		walk(t.root, 0)
	}
	return b.String()
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if a.Key == attribute.Key(key) {
			return a.Value.String()
		}
	}
	return ""
}
