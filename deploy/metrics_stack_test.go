package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/apiprocess"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/internal/webhook"
	"github.com/ordersaga/ordersaga/workflows"
)

// Secrets of the test's stack (the compose stack reads them from .env).
const (
	stackWebhookSecret  = "whsec-metrics-test"
	stackAdminToken     = "admin-metrics-test"
	stackProviderSecret = "refund-metrics-test"
)

// metricsStack is the worker and the starter of the compose stack, each with its own Temporal client and
// metrics registry as in worker/main.go and starter/main.go, on an in-process Temporal server and the test's
// stores, with the refund provider simulator the local stack serves. Each serves its /metrics where the
// compose stack's Prometheus scrapes it: the worker's on METRICS_ADDR, the starter's on ADMIN_ADDR.
type metricsStack struct {
	cfg           config.Config
	store         *sqlstore.Store
	redis         *redisstock.Store
	worker        client.Client
	workerSDK     client.MetricsHandler // the worker's Temporal metrics handler
	workerMetrics string                // URL of the worker's /metrics
	apiMetrics    string                // URL of the starter's /metrics (its admin listener)
	apiURL        string
}

// startMetricsStack brings the two processes up; everything stops when tb ends.
func startMetricsStack(tb testing.TB) *metricsStack {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := sagatest.NewServer(tb)
	provider, err := refundsim.New(refundsim.Options{Secrets: []string{stackProviderSecret}})
	if err != nil {
		tb.Fatal(err)
	}
	providerSrv := httptest.NewServer(provider)
	tb.Cleanup(providerSrv.Close)
	env := map[string]string{
		"TEMPORAL_ADDRESS":       srv.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE":     srv.GetDefaultNamespace(),
		"LOG_LEVEL":              "warn",
		"LOG_FORMAT":             "text",
		"METRICS_ADDR":           "127.0.0.1:" + strconv.Itoa(testenv.StablePort(tb, "127.0.0.1")),
		"ADMIN_ADDR":             "127.0.0.1:" + strconv.Itoa(testenv.StablePort(tb, "127.0.0.1")),
		"PAYMENT_WEBHOOK_SECRET": stackWebhookSecret,
		"ADMIN_TOKEN":            stackAdminToken,
		"REFUND_PROVIDER_URL":    providerSrv.URL,
		"REFUND_PROVIDER_SECRET": stackProviderSecret,
		"REFUND_SEND_INTERVAL":   "1s",
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		tb.Fatal(err)
	}
	logger := platform.NewLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	s := &metricsStack{cfg: cfg, store: testenv.MustOpenStore(tb), redis: testenv.MustOpenRedis(tb)}
	s.startWorker(ctx, tb, logger.With("process", "worker"))
	s.startAPI(ctx, tb, logger.With("process", "starter"))
	return s
}

// newProcessRegistry is a process's registry as the mains make it: the Go and process collectors, and the
// Temporal SDK's metrics through the process's client.
func newProcessRegistry(tb testing.TB) (*prometheus.Registry, client.MetricsHandler) {
	tb.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sdkMetrics, closer := platform.NewTemporalMetricsHandler(reg)
	tb.Cleanup(func() { _ = closer.Close() })
	return reg, sdkMetrics
}

func dial(ctx context.Context, tb testing.TB, cfg config.Config, logger *slog.Logger, h client.MetricsHandler) client.Client {
	tb.Helper()
	c, err := platform.DialTemporal(ctx, cfg, logger, h)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	if err := platform.RegisterSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		tb.Fatal(err)
	}
	return c
}

// startWorker is worker/main.go's run on the test's stores.
func (s *metricsStack) startWorker(ctx context.Context, tb testing.TB, logger *slog.Logger) {
	tb.Helper()
	reg, sdkMetrics := newProcessRegistry(tb)
	c := dial(ctx, tb, s.cfg, logger, sdkMetrics)
	acts, err := platform.NewActivities(c, s.redis, s.store, s.cfg, reg)
	if err != nil {
		tb.Fatal(err)
	}
	stopMetrics, err := platform.ServeMetrics(s.cfg.MetricsAddr, reg, logger)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stopMetrics)
	w, err := platform.StartWorker(c, acts, platform.WorkerOptions(s.cfg))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop)
	stopRefunds, err := platform.StartRefundSender(ctx, c, s.store, s.cfg, reg, logger)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stopRefunds)
	s.worker, s.workerSDK = c, sdkMetrics
	s.workerMetrics = "http://" + s.cfg.MetricsAddr + "/metrics"
}

// startAPI is starter/main.go's run on the test's stores: the Schedules ensured, the API served through
// apiprocess with its admin listener.
func (s *metricsStack) startAPI(ctx context.Context, tb testing.TB, logger *slog.Logger) {
	tb.Helper()
	reg, sdkMetrics := newProcessRegistry(tb)
	c := dial(ctx, tb, s.cfg, logger, sdkMetrics)
	if err := platform.EnsureScheduleWith(ctx, c, platform.ReconcileInterval(s.cfg), platform.ReconcileInput(s.cfg)); err != nil {
		tb.Fatal(err)
	}
	if err := platform.EnsureCleanupSchedule(ctx, c, workflows.DefaultIdempotencyCleanupInterval, platform.CleanupInput(s.cfg)); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := apiprocess.Open(s.cfg, api.Deps{Logger: logger, Temporal: c, Store: s.store, Redis: s.redis, Registry: reg}, ln)
	if err != nil {
		tb.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, 10*time.Second) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("order API: %v", err)
		}
	})
	s.apiURL = "http://" + srv.Addr().String()
	s.apiMetrics = "http://" + s.cfg.AdminAddr + "/metrics"
}

// stock sets a SKU's stock and price in the database and loads Redis to match.
func (s *metricsStack) stock(tb testing.TB, sku string, units, priceCents int64) {
	tb.Helper()
	ctx := context.Background()
	if err := s.store.SetInventory(ctx, sku, units, priceCents); err != nil {
		tb.Fatal(err)
	}
	if err := s.redis.SetAvailable(ctx, sku, units); err != nil {
		tb.Fatal(err)
	}
}

// call sends one request to the order API and returns the status and the body.
func (s *metricsStack) call(tb testing.TB, method, path string, body []byte, header map[string]string) (int, []byte) {
	tb.Helper()
	r := testenv.Do(tb, method, s.apiURL+path, body, header)
	return r.Status, r.Body
}

// place posts an order of qty units of sku and returns the status and the order (zero unless 201).
func (s *metricsStack) place(tb testing.TB, key, user, sku string, qty int64) (int, ordersaga.Order) {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"user_id": user, "lines": []map[string]any{{"sku": sku, "qty": qty}}})
	status, b := s.call(tb, http.MethodPost, "/v1/orders", body, map[string]string{"Idempotency-Key": key})
	var o ordersaga.Order
	if status == http.StatusCreated {
		if err := json.Unmarshal(b, &o); err != nil {
			tb.Fatalf("order %s: %v", b, err)
		}
	}
	return status, o
}

// pay delivers a succeeded payment event of the order's amount, signed, and returns the webhook's answer.
func (s *metricsStack) pay(tb testing.TB, o ordersaga.Order, eventID string) ordersaga.PaymentAnswer {
	tb.Helper()
	body, _ := json.Marshal(ordersaga.PaymentEvent{EventID: eventID, OrderID: o.OrderID, AmountCents: o.AmountCents,
		Currency: s.cfg.Currency, Status: ordersaga.PaymentSucceeded})
	status, b := s.call(tb, http.MethodPost, "/v1/payments/webhook", body,
		map[string]string{webhook.Header: webhook.Sign(time.Now(), body, stackWebhookSecret)})
	var a ordersaga.PaymentAnswer
	if status != http.StatusOK {
		tb.Fatalf("payment %s of %s: %d %s", eventID, o.OrderID, status, b)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		tb.Fatalf("payment answer %s: %v", b, err)
	}
	return a
}

// cancel cancels an order and returns its status afterwards.
func (s *metricsStack) cancel(tb testing.TB, o ordersaga.Order) ordersaga.Status {
	tb.Helper()
	status, b := s.call(tb, http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil)
	if status != http.StatusOK {
		tb.Fatalf("cancel %s: %d %s", o.OrderID, status, b)
	}
	var got ordersaga.Order
	if err := json.Unmarshal(b, &got); err != nil {
		tb.Fatalf("cancelled order %s: %v", b, err)
	}
	return got.Status
}

// reconcile runs reconciliation once, as the Schedule does, and returns its result.
func (s *metricsStack) reconcile(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, res, err := platform.RunOnce(ctx, s.worker, platform.ReconcileInput(s.cfg))
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%+v", res)
}
