package reconcile

import (
	"slices"

	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are reconciliation's and the reserve fallbacks' Prometheus metrics. A nil *Metrics counts nothing.
type Metrics struct {
	runs          prometheus.Counter
	skus          prometheus.Counter
	driftUnits    *prometheus.CounterVec
	repairs       *prometheus.CounterVec
	raced         prometheus.Counter
	lastDrifted   prometheus.Gauge
	lastDrift     prometheus.Gauge
	lastRepairs   prometheus.Gauge
	lastRun       prometheus.Gauge
	fallbacks     prometheus.Counter
	coldLoads     prometheus.Counter
	leakedUnits   prometheus.Counter
	anomalyWrites prometheus.Counter

	moneyFindings  *prometheus.GaugeVec
	moneyWrites    *prometheus.CounterVec
	refundsUnsent  prometheus.Gauge
	refundsRefused prometheus.Gauge
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reconcile_runs_total",
			Help: "Reconciliation runs completed."}),
		skus: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reconcile_skus_checked_total",
			Help: "SKUs compared between Redis and the database."}),
		driftUnits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersaga_reconcile_drift_units_total",
			Help: "Units by which redis.available differed from the database's truth when checked; direction=over means Redis promised more than the database has."},
			[]string{"direction"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersaga_reconcile_repairs_total",
			Help: "Repairs made by reconciliation, by the kind of anomaly repaired (see stock_anomalies.kind)."},
			[]string{"kind"}),
		raced: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reconcile_raced_total",
			Help: "Counters left alone because Redis kept moving under the compare-and-set (retried next run)."}),
		lastDrifted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_reconcile_last_drifted_skus",
			Help: "SKUs whose counter differed from the truth in the last run."}),
		lastDrift: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_reconcile_last_drift_units",
			Help: "Σ |redis.available − truth| over the SKUs of the last run."}),
		lastRepairs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_reconcile_last_repairs",
			Help: "Repairs made by the last run."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_reconcile_last_run_timestamp_seconds",
			Help: "When the last reconciliation run finished (Unix seconds)."}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reserve_db_fallback_total",
			Help: "Reserves that found Redis unreachable and fell back to the database deduct alone."}),
		coldLoads: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reserve_cold_loads_total",
			Help: "SKU counters found missing by a reserve and loaded from the database."}),
		leakedUnits: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reconcile_leaked_units_restored_total",
			Help: "Units given back to the database from orders whose workflow was gone."}),
		anomalyWrites: prometheus.NewCounter(prometheus.CounterOpts{Name: "ordersaga_reconcile_anomalies_total",
			Help: "Rows written to stock_anomalies by reconciliation."}),
		moneyFindings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ordersaga_reconcile_money_discrepancies",
			Help: "Money discrepancies the last money reconciliation saw, by kind (see money_anomalies.kind); all 0 when captured = applied + refunded and every applied payment is its PAID order's."},
			[]string{"kind"}),
		moneyWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ordersaga_reconcile_money_anomalies_total",
			Help: "Rows written to money_anomalies (each discrepancy once), by kind."},
			[]string{"kind"}),
		refundsUnsent: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_refunds_unsent",
			Help: "Refunds recorded and still to send (not marked sent by the payment provider's adapter, not refused by the provider), when the last money reconciliation ran."}),
		refundsRefused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ordersaga_refunds_refused",
			Help: "Refunds the payment provider refused for good, waiting for a person (requeue or settle by hand), when the last money reconciliation ran."}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.skus, m.driftUnits, m.repairs, m.raced, m.lastDrifted, m.lastDrift,
		m.lastRepairs, m.lastRun, m.fallbacks, m.coldLoads, m.leakedUnits, m.anomalyWrites, m.moneyFindings, m.moneyWrites,
		m.refundsUnsent, m.refundsRefused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) reserveFallback() {
	if m != nil {
		m.fallbacks.Inc()
	}
}

func (m *Metrics) coldLoad() {
	if m != nil {
		m.coldLoads.Inc()
	}
}

// Batch counts what one batch of a run found; the per-run gauges are set by Run.
func (m *Metrics) Batch(s Summary, found []sqlstore.Anomaly) {
	if m == nil {
		return
	}
	m.skus.Add(float64(s.SKUs))
	m.driftUnits.WithLabelValues("over").Add(float64(s.OverUnits))
	m.driftUnits.WithLabelValues("under").Add(float64(s.UnderUnits))
	m.raced.Add(float64(s.Raced))
	m.leakedUnits.Add(float64(s.LeakedUnits))
	m.anomalyWrites.Add(float64(len(found)))
	for _, a := range found {
		if isRepair(a.Action) {
			m.repairs.WithLabelValues(a.Kind).Inc()
		}
	}
}

// Run sets the per-run gauges from a finished run (finished: its end, in Unix seconds).
func (m *Metrics) Run(s Summary, finished float64) {
	if m == nil {
		return
	}
	m.runs.Inc()
	m.lastDrifted.Set(float64(s.Drifted))
	m.lastDrift.Set(float64(s.DriftUnits))
	m.lastRepairs.Set(float64(s.Repairs()))
	m.lastRun.Set(finished)
}

// Money sets the money gauges from a finished money step: every kind, so a cleared discrepancy shows 0.
func (m *Metrics) Money(s MoneySummary) {
	if m == nil {
		return
	}
	for _, k := range sqlstore.MoneyKinds {
		m.moneyFindings.WithLabelValues(k).Set(float64(s.ByKind[k]))
	}
	m.refundsUnsent.Set(float64(s.RefundsUnsent))
	m.refundsRefused.Set(float64(s.RefundsRefused))
}

// MoneyRecorded counts the money findings a run recorded for the first time.
func (m *Metrics) MoneyRecorded(found []sqlstore.MoneyFinding) {
	if m == nil {
		return
	}
	for _, f := range found {
		m.moneyWrites.WithLabelValues(f.Kind).Inc()
	}
}

func isRepair(action string) bool { return slices.Contains(sqlstore.RepairActions, action) }
