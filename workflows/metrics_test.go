package workflows

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"go.temporal.io/sdk/client"
)

// countingMetrics is a client.MetricsHandler that counts the increments of the workflow's own counters
// (ordersaga_*) by name and tags; the SDK's metrics go nowhere.
type countingMetrics struct {
	tags   map[string]string
	mu     *sync.Mutex
	counts map[string]int64 // name{k=v,...} -> total
}

func newCountingMetrics() *countingMetrics {
	return &countingMetrics{tags: map[string]string{}, mu: &sync.Mutex{}, counts: map[string]int64{}}
}

func (m *countingMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	merged := maps.Clone(m.tags)
	maps.Copy(merged, tags)
	return &countingMetrics{tags: merged, mu: m.mu, counts: m.counts}
}

func (m *countingMetrics) Counter(name string) client.MetricsCounter {
	if !strings.HasPrefix(name, "ordersaga_") {
		return client.MetricsNopHandler.Counter(name)
	}
	key := metricKey(name, m.tags)
	return counterFunc(func(d int64) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.counts[key] += d
	})
}

func (m *countingMetrics) Gauge(name string) client.MetricsGauge {
	return client.MetricsNopHandler.Gauge(name)
}
func (m *countingMetrics) Timer(name string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer(name)
}

// count is the total of the counter name among the series whose tags include want.
func (m *countingMetrics) count(name string, want map[string]string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for key, v := range m.counts {
		if !strings.HasPrefix(key, name+"{") {
			continue
		}
		all := true
		for k, val := range want {
			all = all && strings.Contains(key, k+"="+val+",")
		}
		if all {
			n += v
		}
	}
	return n
}

// metricKey is name{k=v,...,} with the tags in key order.
func metricKey(name string, tags map[string]string) string {
	var b strings.Builder
	b.WriteString(name + "{")
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString(k + "=" + tags[k] + ",")
	}
	return b.String() + "}"
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }
