package api

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ordersaga/ordersaga/internal/placement"
)

// Metrics are the order API's Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// reserve counts POST /v1/orders by outcome: reserved, replayed, sold_out_fast_path (refused without a
	// workflow), sold_out (refused by the saga), limit_exceeded_fast_path, limit_exceeded, unknown_sku,
	// rejected, key_reused, pending, gated (503 without a workflow: the units left were all still being placed
	// after the admission gate's wait), unavailable, busy, error.
	reserve *prometheus.CounterVec
	// places counts Update-with-Start calls: the workflows the API started or attached to.
	places prometheus.Counter
	// payments counts webhook deliveries by result.
	payments *prometheus.CounterVec
	// placing is the Update-with-Start calls in flight (PLACE_CONCURRENCY at most), waiting the placements
	// admitted and waiting for one of them.
	placing, waiting prometheus.Gauge
	// line observes the lines at the front door.
	line *lineMetrics
}

// lineMetrics observes what the lines answer (placement.LineMetrics): admissions and their waits from the
// first arrival, tickets dropped as abandoned, and each line's length as this process last saw it. A SKU's
// series goes when its line is empty or the SKU is sold out (its holders are answered sold out at once, and
// their tickets wait out their life in Redis), so only the SKUs with a line a buyer can wait in have one.
type lineMetrics struct {
	admissions, abandoned prometheus.Counter
	waited                prometheus.Histogram
	length                *prometheus.GaugeVec
	shown                 sync.Map // SKU -> true while length has its series
}

func (m *lineMetrics) Seen(t placement.Turn) {
	m.abandoned.Add(float64(t.Abandoned))
	if t.Admitted {
		m.admissions.Inc()
		m.waited.Observe(t.Waited.Seconds())
	}
	switch {
	case t.SKU == "":
	case t.Length > 0 && !t.SoldOut:
		m.length.WithLabelValues(t.SKU).Set(float64(t.Length))
		m.shown.Store(t.SKU, true)
	default:
		if _, ok := m.shown.LoadAndDelete(t.SKU); ok {
			m.length.DeleteLabelValues(t.SKU)
		}
	}
}

// NewMetrics registers the API's metrics on reg; ones already registered there (a second server on one
// registry) are shared.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersaga_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ordersaga_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"})),
		reserve: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersaga_reserve_outcomes_total", Help: "POST /v1/orders by outcome (sold_out_fast_path and gated started no workflow).",
		}, []string{"outcome"})),
		places: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ordersaga_order_workflow_places_total", Help: "Update-with-Start calls of OrderWorkflow made by the API.",
		})),
		payments: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ordersaga_payment_webhooks_total", Help: "Payment webhook deliveries by result.",
		}, []string{"result"})),
		placing: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersaga_placements_in_flight", Help: "Update-with-Start calls of OrderWorkflow in flight (at most PLACE_CONCURRENCY).",
		})),
		waiting: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ordersaga_placements_waiting", Help: "Placements admitted and waiting for one of the Update-with-Start calls in flight.",
		})),
		line: &lineMetrics{
			admissions: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
				Name: "ordersaga_line_admissions_total", Help: "Placements the lines admitted (counted by the admission gate) in this process.",
			})),
			abandoned: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
				Name: "ordersaga_line_abandoned_total", Help: "Tickets this process found abandoned (their holder not back in time) and dropped from a line.",
			})),
			waited: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
				Name: "ordersaga_line_wait_seconds", Help: "Wait of the admitted placements from their first arrival (0 without a line).",
				Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 20, 30, 60},
			})),
			length: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Name: "ordersaga_line_length", Help: "Tickets in a SKU's line, as this process last saw it (no series while the line is empty or the SKU sold out).",
			}, []string{"sku"})),
		},
	}
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic("api: register metric: " + err.Error())
	}
	return c
}

// instrument counts every request by its route pattern (the mux sets it; "unmatched" otherwise).
func (m *Metrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

func (m *Metrics) handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wroteHeader = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
