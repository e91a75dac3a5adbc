package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestWorkerServesTemporalSDKMetrics runs the worker command against an in-process Temporal server and the
// test's stores, runs a reconciliation through it, and reads METRICS_ADDR: the SDK's worker metrics are
// there (schedule-to-start latency of workflow tasks, the task slots), beside reconciliation's own.
func TestWorkerServesTemporalSDKMetrics(t *testing.T) {
	t.Parallel()
	srv := sagatest.NewServer(t)
	rdb, prefix := testenv.RedisClient(t)
	metricsAddr := freeAddr(t)
	env := map[string]string{
		"TEMPORAL_ADDRESS":   srv.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE": srv.GetDefaultNamespace(),
		"REDIS_ADDR":         rdb.(*redis.Client).Options().Addr,
		"REDIS_KEY_PREFIX":   prefix,
		"METRICS_ADDR":       metricsAddr,
		"LOG_FORMAT":         "text",
		"LOG_LEVEL":          "warn",
	}
	if testenv.RealMySQL() {
		env["MYSQL_DSN"] = testenv.MySQLDatabase(t)
	} else {
		env["SQLITE_PATH"] = filepath.Join(t.TempDir(), "worker.db")
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"worker"}, func(k string) string { return env[k] }, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the worker did not stop within a minute")
		}
	})

	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if _, _, err := platform.RunOnce(rctx, srv.GetDefaultClient(), workflows.ReconcileInput{}); err != nil {
		t.Fatalf("a reconciliation through the worker: %v", err)
	}
	want := []string{
		"temporal_workflow_task_schedule_to_start_latency",
		"temporal_worker_task_slots_available",
		"temporal_request",
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		body = scrape(t, "http://"+metricsAddr+"/metrics")
		if containsAll(body, want) {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("METRICS_ADDR has no %s series", w)
		}
	}
	if !strings.Contains(body, "ordersaga_") {
		t.Error("METRICS_ADDR lost the worker's own (ordersaga_) series")
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return "" // not listening yet
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
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
