package sale

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Fairness is what the buyers' visits (BuyerLog) say of the line at the front door (issue 45): overtakes, the
// winners' latency from their first arrival, the sold-out answers to buyers who came after their SKU sold out,
// and the waits the 503 answers asked for. The overtakes are a check of the verdict only with --max-overtakes;
// the targets are informational.
//
// An overtake: a buyer w of SKU s, first arrived at a_w and answered placed at p_w, overtook a buyer b of s when
// b first arrived at a_b ≤ a_w − OvertakeLead, was not yet finally answered at p_w (its final answer, or its
// leaving, came after p_w), and ended told sold out or left without an answer (gave up). Overtakes counts the
// winners w that overtook at least one buyer; OvertakePairs the pairs (w, b). A buyer that ended with another
// answer (the per-user limit, an error) is nobody's loser; one placed is nobody's loser either.
type Fairness struct {
	Buyers        int `json:"buyers"`
	Placed        int `json:"placed"`
	SoldOut       int `json:"sold_out"`
	LimitExceeded int `json:"limit_exceeded,omitempty"`
	// GaveUp is the buyers left without an answer: still told to wait when their patience was over.
	GaveUp int `json:"gave_up"`
	Errors int `json:"errors"`

	Overtakes     int64 `json:"overtakes"`
	OvertakePairs int64 `json:"overtake_pairs"`
	// MostLeadMS is the longest an overtaken buyer had been there before its winner arrived.
	MostLeadMS float64 `json:"most_lead_ms,omitempty"`
	// BySKU is the overtakes per SKU (SKUs with none left out).
	BySKU map[string]int64 `json:"by_sku,omitempty"`
	// MaxOvertakes is the bound the overtakes were judged by (nil: not judged).
	MaxOvertakes *int64 `json:"max_overtakes,omitempty"`

	// Winners is the placed buyers' time from first arrival to the answer that placed them.
	Winners Spread `json:"winners_from_arrival"`
	// LateSoldOut is the time from first arrival to the sold-out answer of the buyers who first arrived after
	// their SKU sold out (the first sold-out answer any buyer of the SKU got).
	LateSoldOut Spread `json:"late_sold_out"`

	// Waits503 is the 503 answers the buyers were told to wait by; BuyersWaited the buyers told at least once;
	// WaitedSeconds the time they spent waiting as Retry-After said, in all; Waited its spread per buyer that
	// waited.
	Waits503      int64   `json:"waits_503"`
	BuyersWaited  int     `json:"buyers_waited"`
	WaitedSeconds float64 `json:"waited_seconds"`
	Waited        Spread  `json:"waited"`
	// Targets are issue 45's, met or not (informational).
	Targets []Target `json:"targets"`
}

// Spread is a count and exact quantiles of durations (nearest rank).
type Spread struct {
	Count int     `json:"count"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// Target is one of the line's targets against the run's figure.
type Target struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  string `json:"value"`
	// Met is false when not met; NoData when the run had nothing to judge it by.
	Met    bool `json:"met"`
	NoData bool `json:"no_data,omitempty"`
}

// OvertakeLead is how much earlier a buyer must have arrived for a later winner to overtake it.
const OvertakeLead = 100 * time.Millisecond

// Issue 45's targets.
const (
	targetWinnersP99MS     = 5000
	targetLateSoldOutP99MS = 20
)

// Failed reports whether the overtakes were judged and are above the bound.
func (f *Fairness) Failed() bool {
	return f != nil && f.MaxOvertakes != nil && f.Overtakes > *f.MaxOvertakes
}

// spreadOf summarises durations in µs (sorts them).
func spreadOf(us []int64) Spread {
	if len(us) == 0 {
		return Spread{}
	}
	sort.Slice(us, func(a, b int) bool { return us[a] < us[b] })
	q := func(p float64) float64 {
		i := max(int(math.Ceil(p*float64(len(us))))-1, 0)
		return float64(us[i]) / 1e3
	}
	return Spread{Count: len(us), P50MS: q(0.50), P99MS: q(0.99), MaxMS: float64(us[len(us)-1]) / 1e3}
}

// stint is one buyer's first arrival and final answer (or leaving), in µs.
type stint struct{ arrived, answered int64 }

// overtakes counts, among one SKU's buyers, the winners that overtook a loser (see Fairness), the (winner,
// loser) pairs, and the longest lead of an overtaken loser over its winner's arrival (µs). O((w+l) log l).
func overtakes(winners, losers []stint, lead int64) (n, pairs, mostLead int64) {
	if len(winners) == 0 || len(losers) == 0 {
		return 0, 0, 0
	}
	// By answer: the earliest arrival among the losers answered after each point (a suffix minimum).
	byAns := append([]stint(nil), losers...)
	sort.Slice(byAns, func(a, b int) bool { return byAns[a].answered < byAns[b].answered })
	sufMin := make([]int64, len(byAns)+1)
	sufMin[len(byAns)] = math.MaxInt64
	for i := len(byAns) - 1; i >= 0; i-- {
		sufMin[i] = min(sufMin[i+1], byAns[i].arrived)
	}
	for _, w := range winners {
		i := sort.Search(len(byAns), func(k int) bool { return byAns[k].answered > w.answered })
		if sufMin[i] <= w.arrived-lead {
			n++
			mostLead = max(mostLead, w.arrived-sufMin[i])
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	// The pairs: the losers arrived by a_w − lead (swept in arrival order into a Fenwick tree over their
	// answer times) answered after p_w.
	ans := make([]int64, len(losers))
	for i, b := range losers {
		ans[i] = b.answered
	}
	sort.Slice(ans, func(a, b int) bool { return ans[a] < ans[b] })
	byArr := append([]stint(nil), losers...)
	sort.Slice(byArr, func(a, b int) bool { return byArr[a].arrived < byArr[b].arrived })
	ws := append([]stint(nil), winners...)
	sort.Slice(ws, func(a, b int) bool { return ws[a].arrived < ws[b].arrived })
	tree := make([]int64, len(ans)+1)
	inserted := int64(0)
	j := 0
	for _, w := range ws {
		for ; j < len(byArr) && byArr[j].arrived <= w.arrived-lead; j++ {
			k := sort.Search(len(ans), func(i int) bool { return ans[i] >= byArr[j].answered }) + 1
			for ; k < len(tree); k += k & -k {
				tree[k]++
			}
			inserted++
		}
		// Inserted losers answered at or before p_w.
		var done int64
		for k := sort.Search(len(ans), func(i int) bool { return ans[i] > w.answered }); k > 0; k -= k & -k {
			done += tree[k]
		}
		pairs += inserted - done
	}
	return n, pairs, mostLead
}

// judgeFairness computes the figures of a buyer log.
func judgeFairness(bl *BuyerLog) *Fairness {
	f := &Fairness{MaxOvertakes: bl.MaxOvertakes}
	type sku struct {
		winners, losers []stint
		soldOutAt       int64
		soldOut         []stint
	}
	skus := map[string]*sku{}
	var winners, waited []int64
	for _, g := range bl.Groups {
		s := skus[g.SKU]
		if s == nil {
			s = &sku{soldOutAt: math.MaxInt64}
			skus[g.SKU] = s
		}
		n := len(g.ArrivedUS)
		f.Buyers += n
		for i := range n {
			st := stint{g.ArrivedUS[i], g.AnsweredUS[i]}
			switch g.Outcome {
			case BuyerPlaced:
				s.winners = append(s.winners, st)
				winners = append(winners, st.answered-st.arrived)
			case BuyerSoldOut:
				s.losers = append(s.losers, st)
				s.soldOut = append(s.soldOut, st)
				s.soldOutAt = min(s.soldOutAt, st.answered)
			case BuyerGaveUp:
				s.losers = append(s.losers, st)
			}
			if i < len(g.Waits) && g.Waits[i] > 0 {
				f.Waits503 += g.Waits[i]
				f.BuyersWaited++
				waited = append(waited, g.WaitedUS[i])
				f.WaitedSeconds += float64(g.WaitedUS[i]) / 1e6
			}
		}
		switch g.Outcome {
		case BuyerPlaced:
			f.Placed += n
		case BuyerSoldOut:
			f.SoldOut += n
		case BuyerLimitExceeded:
			f.LimitExceeded += n
		case BuyerGaveUp:
			f.GaveUp += n
		default:
			f.Errors += n
		}
	}
	var late []int64
	lead := int64(OvertakeLead / time.Microsecond)
	for name, s := range skus {
		n, pairs, most := overtakes(s.winners, s.losers, lead)
		f.Overtakes += n
		f.OvertakePairs += pairs
		f.MostLeadMS = math.Max(f.MostLeadMS, float64(most)/1e3)
		if n > 0 {
			if f.BySKU == nil {
				f.BySKU = map[string]int64{}
			}
			f.BySKU[name] = n
		}
		for _, b := range s.soldOut {
			if b.arrived >= s.soldOutAt {
				late = append(late, b.answered-b.arrived)
			}
		}
	}
	f.Winners, f.LateSoldOut, f.Waited = spreadOf(winners), spreadOf(late), spreadOf(waited)
	f.Targets = []Target{
		{Name: "overtakes", Target: "0", Value: fmt.Sprint(f.Overtakes), Met: f.Overtakes == 0, NoData: f.Placed == 0},
		{Name: "winners p99 from first arrival", Target: "< 5 s", Value: fmt.Sprintf("%.0f ms", f.Winners.P99MS),
			Met: f.Winners.Count > 0 && f.Winners.P99MS < targetWinnersP99MS, NoData: f.Winners.Count == 0},
		{Name: "sold out after the SKU sold out, p99", Target: "< 20 ms", Value: fmt.Sprintf("%.1f ms", f.LateSoldOut.P99MS),
			Met: f.LateSoldOut.Count > 0 && f.LateSoldOut.P99MS < targetLateSoldOutP99MS, NoData: f.LateSoldOut.Count == 0},
	}
	return f
}

// text is the target's state as the report prints it.
func (t Target) text() string {
	switch {
	case t.NoData:
		return "no data"
	case t.Met:
		return "met"
	}
	return "not met"
}

// lines are the fairness figures as the summary prints them.
func (f *Fairness) lines() []string {
	if f == nil {
		return nil
	}
	out := []string{
		fmt.Sprintf("buyers (fairness): %d: placed %d, sold out %d, limit exceeded %d, left without an answer %d, errors %d",
			f.Buyers, f.Placed, f.SoldOut, f.LimitExceeded, f.GaveUp, f.Errors),
		fmt.Sprintf("waits: %d answers 503 to %d buyers, %.1f s waited in all; per buyer that waited p50 %.0f ms, p99 %.0f ms, max %.0f ms",
			f.Waits503, f.BuyersWaited, f.WaitedSeconds, f.Waited.P50MS, f.Waited.P99MS, f.Waited.MaxMS),
	}
	judged := "not judged"
	if f.MaxOvertakes != nil {
		judged = fmt.Sprintf("judged, at most %d", *f.MaxOvertakes)
	}
	ot := fmt.Sprintf("overtakes %d (%s): winners placed while a buyer of the same SKU who arrived ≥ %s earlier still waited, then was told sold out or left; %d pairs",
		f.Overtakes, judged, OvertakeLead, f.OvertakePairs)
	if f.Overtakes > 0 {
		ot += fmt.Sprintf(", the longest lead overtaken %.0f ms", f.MostLeadMS)
	}
	out = append(out, ot,
		fmt.Sprintf("winners from first arrival: %d, p50 %.0f ms, p99 %.0f ms, max %.0f ms", f.Winners.Count, f.Winners.P50MS, f.Winners.P99MS, f.Winners.MaxMS),
		fmt.Sprintf("sold out to buyers who arrived after their SKU sold out: %d, p50 %.2f ms, p99 %.2f ms, max %.2f ms", f.LateSoldOut.Count, f.LateSoldOut.P50MS, f.LateSoldOut.P99MS, f.LateSoldOut.MaxMS))
	t := "targets (issue 45, informational):"
	for i, x := range f.Targets {
		if i > 0 {
			t += ";"
		}
		t += fmt.Sprintf(" %s %s (target %s): %s", x.Name, x.Value, x.Target, x.text())
	}
	return append(out, t)
}
