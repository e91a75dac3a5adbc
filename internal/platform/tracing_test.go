package platform_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
)

// collector is an OTLP/gRPC trace collector that keeps the span names and service names it receives.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string]string // span name -> service.name
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans[s.GetName()] = service
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (c *collector) service(span string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.spans[span]
	return s, ok
}

// TestStartTracing_ExportsOverOTLPAndToTheFile: with OTEL_EXPORTER_OTLP_ENDPOINT and TRACES_FILE set, a span
// of the process reaches the collector over OTLP/gRPC, named by the process's service, and is written to the
// file as a JSON line; Close flushes both.
func TestStartTracing_ExportsOverOTLPAndToTheFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{spans: map[string]string{}}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, col)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)

	endpoint := "http://" + ln.Addr().String() // http: the exporter dials without TLS
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	file := filepath.Join(t.TempDir(), "traces.jsonl")
	cfg, err := config.FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "TRACES_FILE": file}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := platform.StartTracing(t.Context(), cfg, "ordersaga-test")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.On() {
		t.Fatal("tracing is off with OTEL_EXPORTER_OTLP_ENDPOINT and TRACES_FILE set")
	}
	_, span := otel.Tracer("test").Start(context.Background(), "reserve SKU-1")
	span.End()
	if err := tr.Close(); err != nil {
		t.Fatalf("close (flush): %v", err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		if svc, ok := col.service("reserve SKU-1"); ok {
			if svc != "ordersaga-test" {
				t.Errorf("the collector got the span from service %q, want ordersaga-test", svc)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the collector received no span within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var line struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
		Name    string `json:"name"`
		Service string `json:"service"`
	}
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatalf("TRACES_FILE %s holds no span", file)
	}
	if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
		t.Fatalf("TRACES_FILE line %q: %v", sc.Text(), err)
	}
	if line.Name != "reserve SKU-1" || line.Service != "ordersaga-test" || len(line.TraceID) != 32 || len(line.SpanID) != 16 {
		t.Errorf("TRACES_FILE line %+v, want the span with its service and IDs", line)
	}
}

// TestTracingOff: without an endpoint or a file nothing is installed.
func TestTracingOff(t *testing.T) {
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tr, err := platform.StartTracing(t.Context(), cfg, "ordersaga-test")
	if err != nil {
		t.Fatal(err)
	}
	if tr.On() {
		t.Error("tracing is on with no endpoint and no file")
	}
	opts, err := platform.TemporalOptions(cfg, platform.NewLogger(os.Stderr, "text", "warn"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Interceptors) != 0 {
		t.Errorf("the Temporal client has %d interceptors with tracing off, want none", len(opts.Interceptors))
	}
}

// TestTracingProtocol: a protocol other than gRPC is refused, naming the variable.
func TestTracingProtocol(t *testing.T) {
	_, err := config.FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf: %v, want an error naming the variable", err)
	}
}
