package refundsend

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the refund sender's Prometheus metrics (the worker's /metrics). A nil *Metrics counts nothing.
// The backlog is the reconciliation's gauge ordersaga_refunds_unsent.
type Metrics struct {
	sentTotal     *prometheus.CounterVec
	refusedTotal  *prometheus.CounterVec
	failuresTotal prometheus.Counter
	seconds       prometheus.Histogram
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		sentTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersaga_refunds_sent_total",
			Help: "Refunds marked sent with the provider's reference; replayed=\"true\": the provider answered an earlier request's refund (a repeated send)."},
			[]string{"replayed"}),
		refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersaga_refunds_refused_total",
			Help: "Refunds the provider refused for good, recorded on the row, per refusal code."}, []string{"code"}),
		failuresTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_refund_send_failures_total",
			Help: "Attempts to send a refund that failed retryably (provider unreachable, slow, overloaded, or refusing the signature)."}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ordersaga_refund_provider_request_seconds",
			Help:    "Time the provider took to answer one refund request (or to fail it).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}),
	}
	for _, c := range []prometheus.Collector{m.sentTotal, m.refusedTotal, m.failuresTotal, m.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.sentTotal.WithLabelValues("false")
	m.sentTotal.WithLabelValues("true")
	return m, nil
}

func (m *Metrics) sent(replayed bool) {
	if m == nil {
		return
	}
	if replayed {
		m.sentTotal.WithLabelValues("true").Inc()
	} else {
		m.sentTotal.WithLabelValues("false").Inc()
	}
}

func (m *Metrics) refused(code string) {
	if m != nil {
		m.refusedTotal.WithLabelValues(code).Inc()
	}
}

func (m *Metrics) failed() {
	if m != nil {
		m.failuresTotal.Inc()
	}
}

func (m *Metrics) observe(d time.Duration) {
	if m != nil {
		m.seconds.Observe(d.Seconds())
	}
}
