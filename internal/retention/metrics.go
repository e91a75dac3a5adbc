package retention

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the idempotency cleanup's Prometheus metrics. A nil *Metrics counts nothing.
type Metrics struct {
	rowsDeleted    prometheus.Counter
	markersDeleted prometheus.Counter
	runs           prometheus.Counter
	lastRun        prometheus.Gauge
	lastRows       prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		rowsDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_idempotency_cleanup_rows_deleted_total",
			Help: "Expired rows of idempotency_keys deleted by the cleanup."}),
		markersDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_idempotency_cleanup_markers_deleted_total",
			Help: "Redis markers of expired idempotency keys deleted by the cleanup (the others expired by their TTL or belong to a new life of the key)."}),
		runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_idempotency_cleanup_runs_total",
			Help: "Idempotency cleanup runs completed."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_idempotency_cleanup_last_run_timestamp_seconds",
			Help: "When the last idempotency cleanup run finished (Unix seconds)."}),
		lastRows: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_idempotency_cleanup_last_run_rows_deleted",
			Help: "Rows of idempotency_keys the last cleanup run deleted."}),
	}
	for _, c := range []prometheus.Collector{m.rowsDeleted, m.markersDeleted, m.runs, m.lastRun, m.lastRows} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) rows(n int) {
	if m != nil {
		m.rowsDeleted.Add(float64(n))
	}
}

func (m *Metrics) markers(n int) {
	if m != nil {
		m.markersDeleted.Add(float64(n))
	}
}

// Run sets the per-run gauges from a finished run (finished: its end, in Unix seconds).
func (m *Metrics) Run(s Summary, finished float64) {
	if m == nil {
		return
	}
	m.runs.Inc()
	m.lastRun.Set(finished)
	m.lastRows.Set(float64(s.Rows))
}
