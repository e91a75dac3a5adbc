package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Tracing is the process's OpenTelemetry tracing: one trace per order across the order API and the workers (the
// HTTP request, Update-with-Start, the workflow, each activity, the Redis scripts and the SQL statements). It is
// on when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or TRACES_FILE is set; off, nothing
// is installed and nothing costs.
type Tracing struct {
	provider *sdktrace.TracerProvider // nil when off
	file     *os.File
}

// StartTracing sets the process's tracer provider from cfg: spans batched to the OTLP/gRPC endpoint (the
// exporter reads the standard OTEL_EXPORTER_OTLP_* variables: endpoint, headers, insecure, timeout) and/or
// written as JSON lines to TRACES_FILE. service names the process (OTEL_SERVICE_NAME overrides it).
func StartTracing(ctx context.Context, cfg config.Config, service string) (*Tracing, error) {
	var exporters []sdktrace.SpanExporter
	t := &Tracing{}
	if cfg.TracesEndpoint != "" {
		exp, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT=%s: %w", cfg.TracesEndpoint, err)
		}
		exporters = append(exporters, exp)
	}
	if cfg.TracesFile != "" {
		f, err := os.OpenFile(cfg.TracesFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("TRACES_FILE=%s: %w", cfg.TracesFile, err)
		}
		t.file = f
		exporters = append(exporters, NewJSONLinesExporter(f))
	}
	if len(exporters) == 0 {
		return t, nil
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(serviceResource(service))}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	t.provider = sdktrace.NewTracerProvider(opts...)
	InstallTracerProvider(t.provider)
	return t, nil
}

// InstallTracerProvider makes tp the process's tracer provider, with the W3C trace-context and baggage
// propagation that carries a trace from the order API into the workers.
func InstallTracerProvider(tp *sdktrace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

func serviceResource(service string) *resource.Resource {
	if name := os.Getenv("OTEL_SERVICE_NAME"); name != "" {
		service = name
	}
	return resource.NewSchemaless(semconv.ServiceName(service))
}

// On reports whether spans are recorded.
func (t *Tracing) On() bool { return t != nil && t.provider != nil }

// Close is Shutdown bounded by five seconds: what a stopping process calls.
func (t *Tracing) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.Shutdown(ctx)
}

// Shutdown flushes the spans not exported yet (bounded by ctx) and closes TRACES_FILE.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	if t.provider != nil {
		err = t.provider.Shutdown(ctx)
	}
	if t.file != nil {
		err = errors.Join(err, t.file.Close())
	}
	return err
}

// TraceStores adds a span per Redis command and per SQL statement to the stores' clients when tracing is on
// (cfg.TracingOn); once per client. Any form of OpenRedis's client takes the hook: a cluster client runs its
// own hooks once per command, whichever node serves it, apart from its nodes' clients.
func TraceStores(cfg config.Config, rdb redis.UniversalClient, store *sqlstore.Store) error {
	if !cfg.TracingOn() {
		return nil
	}
	redisstock.Trace(rdb)
	return store.Trace()
}

// TemporalInterceptor is the Temporal SDK's OpenTelemetry interceptor: a span for Update-with-Start on the
// client, the workflow and each activity on the worker, carried across in the Temporal headers.
func TemporalInterceptor() (interceptor.ClientInterceptor, error) {
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}

// jsonLinesExporter writes each span as one JSON line: the local stack's "keep them" without a collector.
type jsonLinesExporter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLinesExporter writes spans to w, one JSON object per line (trace and span IDs, parent, name,
// service, start, duration, status, attributes).
func NewJSONLinesExporter(w io.Writer) sdktrace.SpanExporter { return &jsonLinesExporter{w: w} }

type spanLine struct {
	TraceID    string            `json:"trace_id"`
	SpanID     string            `json:"span_id"`
	ParentID   string            `json:"parent_id,omitempty"`
	Name       string            `json:"name"`
	Service    string            `json:"service,omitempty"`
	Start      time.Time         `json:"start"`
	DurationMS float64           `json:"duration_ms"`
	Status     string            `json:"status,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

func (e *jsonLinesExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	enc := json.NewEncoder(e.w)
	for _, s := range spans {
		line := spanLine{
			TraceID: s.SpanContext().TraceID().String(), SpanID: s.SpanContext().SpanID().String(),
			Name: s.Name(), Start: s.StartTime().UTC(),
			DurationMS: float64(s.EndTime().Sub(s.StartTime()).Microseconds()) / 1000,
		}
		if p := s.Parent(); p.IsValid() {
			line.ParentID = p.SpanID().String()
		}
		if v, ok := s.Resource().Set().Value(semconv.ServiceNameKey); ok {
			line.Service = v.AsString()
		}
		if st := s.Status(); st.Code != 0 {
			line.Status = st.Code.String() + " " + st.Description
		}
		if attrs := s.Attributes(); len(attrs) > 0 {
			line.Attributes = make(map[string]string, len(attrs))
			for _, a := range attrs {
				line.Attributes[string(a.Key)] = a.Value.String()
			}
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("write spans: %w", err)
		}
	}
	return nil
}

func (e *jsonLinesExporter) Shutdown(context.Context) error { return nil }
