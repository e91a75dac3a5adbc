package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// timerStats is what a recording handler keeps of one timer.
type timerStats struct {
	Count int64
	Sum   time.Duration
	Max   time.Duration
}

// recorder is a Temporal SDK metrics handler that keeps the timers (by name and the tags that tell steps
// apart) and the counters, so a benchmark can say where an order's time goes.
type recorder struct {
	mu       *sync.Mutex
	timers   map[string]*timerStats
	counters map[string]int64
	tags     map[string]string
}

func newRecorder() *recorder {
	return &recorder{mu: &sync.Mutex{}, timers: map[string]*timerStats{}, counters: map[string]int64{}, tags: map[string]string{}}
}

var keptTags = []string{"activity_type", "workflow_type", "operation", "task_queue"}

func (r *recorder) key(name string) string {
	var parts []string
	for _, t := range keptTags {
		if v, ok := r.tags[t]; ok && v != "" && v != "none" && v != "_unknown_" {
			parts = append(parts, t+"="+v)
		}
	}
	if len(parts) == 0 {
		return name
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func (r *recorder) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(r.tags)+len(tags))
	for k, v := range r.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &recorder{mu: r.mu, timers: r.timers, counters: r.counters, tags: merged}
}

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(float64) {}

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

func (r *recorder) Counter(name string) client.MetricsCounter {
	k := r.key(name)
	return counterFunc(func(n int64) {
		r.mu.Lock()
		r.counters[k] += n
		r.mu.Unlock()
	})
}

func (r *recorder) Gauge(string) client.MetricsGauge { return gaugeFunc(nil) }

func (r *recorder) Timer(name string) client.MetricsTimer {
	k := r.key(name)
	return timerFunc(func(d time.Duration) {
		r.mu.Lock()
		s := r.timers[k]
		if s == nil {
			s = &timerStats{}
			r.timers[k] = s
		}
		s.Count++
		s.Sum += d
		s.Max = max(s.Max, d)
		r.mu.Unlock()
	})
}

// reset forgets everything recorded so far.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.timers)
	clear(r.counters)
}

// write prints the timers whose name contains one of the filters, by total time.
func (r *recorder) write(w io.Writer, filters ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type row struct {
		key string
		s   timerStats
	}
	var rows []row
	for k, s := range r.timers {
		name, _, _ := strings.Cut(k, "{")
		for _, f := range filters {
			if strings.Contains(name, f) {
				rows = append(rows, row{k, *s})
				break
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].s.Sum > rows[j].s.Sum })
	fmt.Fprintf(w, "    %8s %10s %10s  %s\n", "count", "mean", "max", "Temporal SDK timer")
	for _, r := range rows {
		mean := r.s.Sum / time.Duration(max(r.s.Count, 1))
		fmt.Fprintf(w, "    %8d %10s %10s  %s\n", r.s.Count, mean.Round(10*time.Microsecond), r.s.Max.Round(10*time.Microsecond), r.key)
	}
}
