package sale

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram counts durations in log-linear buckets of microseconds (32 per power of two, ±3%), lock-free.
type Histogram struct {
	buckets [histBuckets]atomic.Int64
	count   atomic.Int64
	sumUS   atomic.Int64
	maxUS   atomic.Int64
}

const (
	subBits     = 5
	histBuckets = (64 - subBits) << subBits
)

func bucketOf(us uint64) int {
	if us < 1<<subBits {
		return int(us)
	}
	e := bits.Len64(us) - subBits - 1
	return (e+1)<<subBits + int(us>>e) - 1<<subBits
}

// bucketLow is the smallest value (µs) of bucket i.
func bucketLow(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	e := i>>subBits - 1
	return uint64(i&(1<<subBits-1)|1<<subBits) << e
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	us := max(d.Microseconds(), 0)
	i := min(bucketOf(uint64(us)), histBuckets-1)
	h.buckets[i].Add(1)
	h.count.Add(1)
	h.sumUS.Add(us)
	for {
		m := h.maxUS.Load()
		if us <= m || h.maxUS.CompareAndSwap(m, us) {
			break
		}
	}
}

// Count is the number of recorded durations.
func (h *Histogram) Count() int64 { return h.count.Load() }

// Quantile returns the q-quantile (0..1) in milliseconds: the middle of the bucket it falls in.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank {
			lo, hi := bucketLow(i), bucketLow(i+1)
			mid := float64(lo+hi) / 2
			return min(mid, float64(h.maxUS.Load())) / 1000
		}
	}
	return float64(h.maxUS.Load()) / 1000
}

// LatencySummary is a histogram as the report shows it (milliseconds).
type LatencySummary struct {
	Count   int64    `json:"count"`
	MeanMS  float64  `json:"mean_ms"`
	P50MS   float64  `json:"p50_ms"`
	P90MS   float64  `json:"p90_ms"`
	P95MS   float64  `json:"p95_ms"`
	P99MS   float64  `json:"p99_ms"`
	P999MS  float64  `json:"p999_ms"`
	MaxMS   float64  `json:"max_ms"`
	Buckets []Bucket `json:"buckets"`
}

// Bucket counts the durations in [LowMS, HighMS).
type Bucket struct {
	LowMS  float64 `json:"low_ms"`
	HighMS float64 `json:"high_ms"`
	Count  int64   `json:"count"`
}

// displayEdges are the report's histogram edges (ms): 1-1.5-2-3-5-7 steps from 0.1 ms to 100 s.
var displayEdges = func() []float64 {
	var out []float64
	for base := 0.1; base < 100000; base *= 10 {
		for _, m := range []float64{1, 1.5, 2, 3, 5, 7} {
			out = append(out, base*m)
		}
	}
	return out
}()

// Summary is the histogram in milliseconds, with its buckets folded onto displayEdges (empty leading and
// trailing buckets dropped).
func (h *Histogram) Summary() LatencySummary {
	n := h.count.Load()
	s := LatencySummary{Count: n}
	if n == 0 {
		return s
	}
	s.MeanMS = float64(h.sumUS.Load()) / float64(n) / 1000
	s.P50MS, s.P90MS, s.P95MS = h.Quantile(0.5), h.Quantile(0.9), h.Quantile(0.95)
	s.P99MS, s.P999MS = h.Quantile(0.99), h.Quantile(0.999)
	s.MaxMS = float64(h.maxUS.Load()) / 1000
	folded := make([]Bucket, len(displayEdges)+1)
	for i := range folded {
		lo, hi := 0.0, math.Inf(1)
		if i > 0 {
			lo = displayEdges[i-1]
		}
		if i < len(displayEdges) {
			hi = displayEdges[i]
		}
		folded[i] = Bucket{LowMS: lo, HighMS: hi}
	}
	for i := range h.buckets {
		c := h.buckets[i].Load()
		if c == 0 {
			continue
		}
		ms := float64(bucketLow(i)) / 1000
		j := 0
		for j < len(displayEdges) && ms >= displayEdges[j] {
			j++
		}
		folded[j].Count += c
	}
	first, last := 0, len(folded)-1
	for first < last && folded[first].Count == 0 {
		first++
	}
	for last > first && folded[last].Count == 0 {
		last--
	}
	s.Buckets = folded[first : last+1]
	if math.IsInf(s.Buckets[len(s.Buckets)-1].HighMS, 1) {
		s.Buckets[len(s.Buckets)-1].HighMS = math.Max(s.MaxMS, s.Buckets[len(s.Buckets)-1].LowMS)
	}
	return s
}
