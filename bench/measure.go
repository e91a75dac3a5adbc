package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// result is one measured side of a pair: operations per second over a fixed time, with latency.
type result struct {
	Name        string
	Concurrency int
	Ops         int64
	Errors      int64
	Elapsed     time.Duration
	P50, P99    time.Duration
	FirstErr    error
	lats        []time.Duration
}

// Rate is successful operations per second.
func (r result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// op is one operation; worker and seq make every call distinct (order IDs, keys).
type op func(ctx context.Context, worker int, seq int64) error

// globalSeq numbers every operation of the process, so that keys and order IDs never repeat across rounds.
var globalSeq atomic.Int64

// measure runs op from conc goroutines in a closed loop: warmup first (not counted), then for dur.
func measure(ctx context.Context, name string, conc int, warmup, dur time.Duration, fn op) result {
	var (
		counting atomic.Bool
		ops      atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Pointer[error]
		mu       sync.Mutex
		lats     []time.Duration
	)
	start := time.Now()
	stopAt := start.Add(warmup + dur)
	var countFrom time.Time
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil && time.Now().Before(stopAt) {
				s := globalSeq.Add(1)
				t := time.Now()
				err := fn(ctx, w, s)
				d := time.Since(t)
				if !counting.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ops.Add(1)
				local = append(local, d)
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		})
	}
	time.Sleep(warmup)
	countFrom = time.Now()
	counting.Store(true)
	wg.Wait()
	r := result{Name: name, Concurrency: conc, Ops: ops.Load(), Errors: errs.Load(), Elapsed: time.Since(countFrom)}
	if p := firstErr.Load(); p != nil {
		r.FirstErr = *p
	}
	r.lats = lats
	r.percentiles()
	return r
}

func (r *result) percentiles() {
	if len(r.lats) == 0 {
		return
	}
	slices.Sort(r.lats)
	r.P50 = r.lats[len(r.lats)/2]
	r.P99 = r.lats[min(len(r.lats)-1, len(r.lats)*99/100)]
}

// merge adds another round of the same side.
func (r *result) merge(o result) {
	if r.Name == "" {
		*r = o
		return
	}
	r.Ops += o.Ops
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.lats = append(r.lats, o.lats...)
	r.percentiles()
}

// measurePair measures the limit and the real side in alternating rounds (limit first), so that a change in
// the machine's load during the pair falls on both sides alike. With -profile, the first real round is
// CPU-profiled into cpu-<profile>.pprof (profile "" = none).
func measurePair(ctx context.Context, o opts, conc int, profile string, realName string, realOp op, limitName string, limitOp op) (real, limit result) {
	for i := range max(o.rounds, 1) {
		limit.merge(measure(ctx, limitName, conc, o.warmup, o.dur, limitOp))
		stop := func() {}
		if i == 0 && profile != "" {
			stop = o.startProfile(profile)
		}
		real.merge(measure(ctx, realName, conc, o.warmup, o.dur, realOp))
		stop()
	}
	return real, limit
}

// pair is one row of the table: the layer measured against its limit, back to back in this process.
type pair struct {
	Layer   string
	Real    result
	Limit   result
	Target  float64 // the target ratio (0 = none)
	Comment string
	Only    string // the arguments after -only that measure the pair again ("temporal -temporal real")
	Load    string // the load average when its step started
	// InMarkdown puts a pair without a target in BENCHMARKS.md's table too (its target cell says none).
	InMarkdown bool
}

func (p pair) Ratio() float64 {
	if p.Limit.Rate() == 0 {
		return 0
	}
	return p.Real.Rate() / p.Limit.Rate()
}

// targetMark is the pair's target and whether the ratio meets it ("≥ 80 % ✓" with sep " "), or none when it
// has no target.
func (p pair) targetMark(sep, none string) string {
	if p.Target <= 0 {
		return none
	}
	mark := "✗"
	if p.Ratio() >= p.Target {
		mark = "✓"
	}
	return fmt.Sprintf("≥ %.0f%s%% %s", p.Target*100, sep, mark)
}

func fmtRate(r result) string {
	if r.Ops == 0 && r.FirstErr != nil {
		return "error"
	}
	return fmt.Sprintf("%.0f", r.Rate())
}

func fmtLat(r result) string {
	return fmt.Sprintf("%s / %s", roundLat(r.P50), roundLat(r.P99))
}

func roundLat(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
