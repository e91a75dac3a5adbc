package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric sums the series of the family name in g that carry the labels given as name, value pairs (a value
// "" matches a series without that label, as in PromQL): a counter's or a gauge's value, a histogram's or a
// summary's sample count. No matching series is 0: a labelled counter has no series until it first counts.
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	sum, _ := gather(t, g, name, labels)
	return sum
}

// MustMetric is Metric for a series that must exist: the test fails when none matches, so that a renamed
// metric or label is not read as 0.
func MustMetric(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	sum, n := gather(t, g, name, labels)
	if n == 0 {
		t.Fatalf("no series %s%q", name, labels)
	}
	return sum
}

func gather(t testing.TB, g prometheus.Gatherer, name string, labels []string) (sum float64, n int) {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("metric %s: labels %q are not name, value pairs", name, labels)
	}
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += value(m)
				n++
			}
		}
	}
	return sum, n
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i < len(pairs); i += 2 {
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] {
				got = l.GetValue()
			}
		}
		if got != pairs[i+1] {
			return false
		}
	}
	return true
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}
