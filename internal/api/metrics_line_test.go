package api

import (
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLineMetrics: what the lines answer becomes the line's metrics: an admission counts once with its wait
// from the first arrival, a refusal in line sets the SKU's length (and counts no admission), the tickets
// found abandoned add up, and a SKU answered sold out (by the line or the fast path) loses its length series.
func TestLineMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg).line
	m.Seen(placement.Turn{SKU: "A", Length: 3, Position: 2, RetryAfter: time.Second, Abandoned: 2})
	m.Seen(placement.Turn{SKU: "B", Length: 5, Position: 4, RetryAfter: time.Second})
	m.Seen(placement.Turn{Admitted: true, SKU: "A", Length: 2, Waited: 1500 * time.Millisecond, Abandoned: 1})
	want(t, reg, map[string]float64{
		"ordersaga_line_admissions_total": 1, "ordersaga_line_abandoned_total": 3,
		"ordersaga_line_wait_seconds_count": 1, "ordersaga_line_wait_seconds_sum": 1.5,
		`ordersaga_line_length{sku="A"}`: 2, `ordersaga_line_length{sku="B"}`: 5,
	})
	m.Seen(placement.Turn{SKU: "B", SoldOut: true})
	m.Seen(placement.Turn{Admitted: true, SKU: "A"}) // the line left empty
	want(t, reg, map[string]float64{
		"ordersaga_line_admissions_total": 2, "ordersaga_line_wait_seconds_count": 2,
		`ordersaga_line_length{sku="A"}`: -1, `ordersaga_line_length{sku="B"}`: -1,
	})
}

// want checks the series of reg named in w (-1: the series must be absent).
func want(t *testing.T, reg *prometheus.Registry, w map[string]float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += `{` + l.GetName() + `="` + l.GetValue() + `"}`
			}
			switch {
			case s.Counter != nil:
				got[name] = s.GetCounter().GetValue()
			case s.Gauge != nil:
				got[name] = s.GetGauge().GetValue()
			case s.Histogram != nil:
				got[name+"_count"] = float64(s.GetHistogram().GetSampleCount())
				got[name+"_sum"] = s.GetHistogram().GetSampleSum()
			}
		}
	}
	for name, v := range w {
		g, ok := got[name]
		switch {
		case v < 0 && ok:
			t.Errorf("%s = %v, want no series", name, g)
		case v >= 0 && (!ok || g != v):
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
}
