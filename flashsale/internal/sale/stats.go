package sale

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome classifies a timed request.
type Outcome int

// Outcomes. The first four are the answers to a buyer's POST /v1/orders (LimitExceeded: 409 …/limit-exceeded,
// the user holds its per-user limit of the SKU); Duplicate is a resend with the same Idempotency-Key; Pay,
// Cancel and LatePay are the follow-ups on accepted orders; Wait is a 503 with Retry-After to a sale buyer who
// comes back as told (Config.Patience): a place in the line, not an error.
const (
	OutAccepted Outcome = iota
	OutSoldOut
	OutLimitExceeded
	OutError
	OutDuplicate
	OutPay
	OutCancel
	OutLatePay
	OutWait
	nOutcomes
)

var outcomeNames = [nOutcomes]string{"accepted", "sold_out", "limit_exceeded", "error", "duplicate", "pay", "cancel", "late_pay", "wait"}

func (o Outcome) String() string { return outcomeNames[o] }

// maxSeriesSeconds bounds the per-second series (a day); later requests count in its last second.
const maxSeriesSeconds = 24 * 60 * 60

// Stats records every timed request: a latency histogram and a per-second count per outcome, and the
// kinds of errors. Safe for concurrent use.
type Stats struct {
	start time.Time
	hist  [nOutcomes]Histogram
	total [nOutcomes]atomic.Int64

	mu      sync.RWMutex
	seconds []*[nOutcomes]atomic.Int64

	errMu      sync.Mutex
	errKinds   map[string]int64
	errSamples []string
}

// NewStats starts the clock of the per-second series.
func NewStats(start time.Time) *Stats {
	return &Stats{start: start, errKinds: map[string]int64{}}
}

// Record counts one request of outcome o that took d and finished now.
func (s *Stats) Record(o Outcome, d time.Duration) {
	s.hist[o].Record(d)
	s.total[o].Add(1)
	sec := min(max(int(time.Since(s.start)/time.Second), 0), maxSeriesSeconds)
	s.mu.RLock()
	if sec < len(s.seconds) {
		s.seconds[sec][o].Add(1)
		s.mu.RUnlock()
		return
	}
	s.mu.RUnlock()
	s.mu.Lock()
	for len(s.seconds) <= sec {
		s.seconds = append(s.seconds, new([nOutcomes]atomic.Int64))
	}
	s.seconds[sec][o].Add(1)
	s.mu.Unlock()
}

// Error counts an error of a kind and keeps the first few messages.
func (s *Stats) Error(kind, msg string) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.errKinds[kind]++
	if len(s.errSamples) < 20 {
		s.errSamples = append(s.errSamples, fmt.Sprintf("%s: %s", kind, msg))
	}
}

// Total is the number of requests of an outcome so far.
func (s *Stats) Total(o Outcome) int64 { return s.total[o].Load() }

// All is the number of requests of every outcome so far.
func (s *Stats) All() int64 {
	var n int64
	for o := range nOutcomes {
		n += s.total[o].Load()
	}
	return n
}

// ThroughputPoint is one second of the run: requests finished in it, per outcome.
type ThroughputPoint struct {
	T      float64          `json:"t"`
	Counts map[string]int64 `json:"counts"`
}

// Throughput is the per-second series.
func (s *Stats) Throughput() []ThroughputPoint {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ThroughputPoint, len(s.seconds))
	for i, sec := range s.seconds {
		p := ThroughputPoint{T: float64(i), Counts: map[string]int64{}}
		for o := range nOutcomes {
			if n := sec[o].Load(); n > 0 {
				p.Counts[o.String()] = n
			}
		}
		out[i] = p
	}
	return out
}

// Latencies summarises every outcome that occurred.
func (s *Stats) Latencies() map[string]LatencySummary {
	out := map[string]LatencySummary{}
	for o := range nOutcomes {
		if s.hist[o].Count() > 0 {
			out[o.String()] = s.hist[o].Summary()
		}
	}
	return out
}

// Errors returns the error counts by kind and the sampled messages.
func (s *Stats) Errors() (map[string]int64, []string) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	kinds := make(map[string]int64, len(s.errKinds))
	for k, v := range s.errKinds {
		kinds[k] = v
	}
	samples := append([]string(nil), s.errSamples...)
	return kinds, samples
}
