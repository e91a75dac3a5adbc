package redisstock_test

import (
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestTrace_EveryCommandIsOneSpan: with Trace on the store's client, what the store sends is traced under the
// caller's span, one span per command or pipeline, in every Redis form: on a cluster that includes what goes
// to one node's own client (the scan of a SKU's markers, the idempotency markers written and acknowledged on
// their master), which the cluster client's hooks never see, and nothing routed by the cluster client is
// traced twice (a Redis span under a Redis span). The only test of the package that sets the global tracer
// provider.
func TestTrace_EveryCommandIsOneSpan(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })

	rs := testenv.MustOpenRedis(t)
	redisstock.Trace(rs.Client())
	ctx, root := tp.Tracer("test").Start(t.Context(), "test root")
	sku := "SKU-TRACE-" + testenv.RandomID(4)
	if err := rs.SetAvailable(ctx, sku, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Reserve(ctx, "o1", "u1", sku, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Markers(ctx, sku); err != nil {
		t.Fatal(err)
	}
	if err := rs.ClaimMarkers(ctx, redisstock.ClaimMarker{Name: "k-trace-" + testenv.RandomID(4), Nonce: "n", TTL: time.Minute, New: true}); err != nil {
		t.Fatal(err)
	}
	root.End()

	var names []string
	redisSpan := map[string]bool{} // span ID -> a Redis span
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID() == root.SpanContext().TraceID() && s.Name != "test root" {
			redisSpan[s.SpanContext.SpanID().String()] = true
		}
	}
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID() != root.SpanContext().TraceID() || s.Name == "test root" {
			continue
		}
		names = append(names, s.Name)
		if redisSpan[s.Parent.SpanID().String()] {
			t.Errorf("span %q is under another Redis span: a command traced twice", s.Name)
		}
	}
	for _, want := range []string{"redis set", "redis evalsha reserve.lua", "redis scan"} {
		if !slices.Contains(names, want) {
			t.Errorf("no span %q under the caller's span; the spans: %q", want, names)
		}
	}
	// The markers: one pipeline (SET or the claim script, then WAIT under AckMarkers), or the script alone.
	if !slices.Contains(names, "redis pipeline") && !slices.Contains(names, "redis evalsha claim_mark.lua") {
		t.Errorf("the marker write left no span; the spans: %q", names)
	}
}
