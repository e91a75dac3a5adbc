package sale

import (
	"math"
	"sort"
	"sync"
	"time"
)

// The sale buyers' visits, as the fairness figures (fairness.go) and the line over time need them: when each
// buyer first arrived (its first request sent), when it got its final answer or left, what that answer was, and
// how long it waited as 503 Retry-After said. One buyer is one Idempotency-Key of a sale buyer (plan); bots and
// the flood pair are not in it. Its times are on the request log's clock (placeLog.since: microseconds from
// the start of the firing).

// Buyer outcomes, as BuyerGroup.Outcome: the outcomes of the answers, and GaveUp, a buyer who left without an
// answer when its patience was over (Config.Patience).
const (
	BuyerPlaced        = "accepted"
	BuyerSoldOut       = "sold_out"
	BuyerLimitExceeded = "limit_exceeded"
	BuyerGaveUp        = "gave_up"
	BuyerError         = "error"
)

// BuyerGroup is the buyers of one SKU that ended the same way, as columns (8 bytes a buyer a column): buyer i
// arrived at ArrivedUS[i], was finally answered (or left) at AnsweredUS[i], was first told to wait (503) at
// FirstWaitUS[i] (-1: never), waited WaitedUS[i] in all as Retry-After said, and got Waits[i] 503 answers.
type BuyerGroup struct {
	SKU         string  `json:"sku"`
	Outcome     string  `json:"outcome"`
	ArrivedUS   []int64 `json:"arrived_us"`
	AnsweredUS  []int64 `json:"answered_us"`
	FirstWaitUS []int64 `json:"first_wait_us"`
	WaitedUS    []int64 `json:"waited_us"`
	Waits       []int64 `json:"waits"`
}

// BuyerLog is every sale buyer's visit (nil in a report of a flashsale from before it).
type BuyerLog struct {
	// From is when the firing started (the request log's From): the times count from it.
	From time.Time `json:"from"`
	// Patience is how long a buyer kept coming back (0: one-shot buyers, who never wait).
	Patience time.Duration `json:"patience"`
	// MaxOvertakes is the bound the overtakes are judged by (nil: reported, not judged).
	MaxOvertakes *int64       `json:"max_overtakes,omitempty"`
	Groups       []BuyerGroup `json:"groups"`
}

// visit is one buyer's visit as it goes.
type visit struct {
	sku               string
	arrived, answered time.Duration
	firstWait, waited time.Duration // firstWait < 0: never told to wait
	waits             int64
	outcome           string
	started           bool
}

// buyerLog collects the visits while the sale fires, and the positions the answers gave. Safe for concurrent
// use.
type buyerLog struct {
	mu  sync.Mutex
	log BuyerLog
	at  map[[2]string]int
	// pos is, per second from the start of the firing, the positions the answers gave: count, sum, max.
	pos [][3]int64
}

func newBuyerLog(from time.Time, patience time.Duration, maxOvertakes int64) *buyerLog {
	l := &buyerLog{log: BuyerLog{From: from, Patience: patience}, at: map[[2]string]int{}}
	if maxOvertakes >= 0 {
		l.log.MaxOvertakes = &maxOvertakes
	}
	return l
}

// add logs a finished visit.
func (l *buyerLog) add(v *visit) {
	if l == nil || !v.started {
		return
	}
	const us = time.Microsecond
	first := int64(-1)
	if v.firstWait >= 0 {
		first = int64(v.firstWait / us)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{v.sku, v.outcome}
	i, ok := l.at[k]
	if !ok {
		i = len(l.log.Groups)
		l.at[k] = i
		l.log.Groups = append(l.log.Groups, BuyerGroup{SKU: v.sku, Outcome: v.outcome})
	}
	g := &l.log.Groups[i]
	g.ArrivedUS = append(g.ArrivedUS, int64(v.arrived/us))
	g.AnsweredUS = append(g.AnsweredUS, int64((v.answered+us-1)/us))
	g.FirstWaitUS = append(g.FirstWaitUS, first)
	g.WaitedUS = append(g.WaitedUS, int64(v.waited/us))
	g.Waits = append(g.Waits, v.waits)
}

// position notes a place in the line an answer gave, at t from the start of the firing.
func (l *buyerLog) position(t time.Duration, pos int64) {
	if l == nil || pos < 0 {
		return
	}
	sec := min(max(int(t/time.Second), 0), maxSeriesSeconds)
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pos) <= sec {
		l.pos = append(l.pos, [3]int64{})
	}
	p := &l.pos[sec]
	p[0]++
	p[1] += pos
	p[2] = max(p[2], pos)
}

// snapshot is a copy of the log, its groups in a stable order (nil without a log).
func (l *buyerLog) snapshot() *BuyerLog {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	out.Groups = make([]BuyerGroup, len(l.log.Groups))
	for i, g := range l.log.Groups {
		g.ArrivedUS, g.AnsweredUS = append([]int64(nil), g.ArrivedUS...), append([]int64(nil), g.AnsweredUS...)
		g.FirstWaitUS, g.WaitedUS, g.Waits = append([]int64(nil), g.FirstWaitUS...), append([]int64(nil), g.WaitedUS...), append([]int64(nil), g.Waits...)
		out.Groups[i] = g
	}
	sort.Slice(out.Groups, func(a, b int) bool {
		ga, gb := out.Groups[a], out.Groups[b]
		if ga.SKU != gb.SKU {
			return ga.SKU < gb.SKU
		}
		return ga.Outcome < gb.Outcome
	})
	return &out
}

// PositionPoint is one second of the positions the answers gave (Queue-Position or the problem's position).
type PositionPoint struct {
	T       float64 `json:"t"`
	Answers int64   `json:"answers"`
	Mean    float64 `json:"mean"`
	Max     int64   `json:"max"`
}

// positions is the per-second series of the positions, t counted from offset seconds (nil when no answer gave
// one).
func (l *buyerLog) positions(offset float64) []PositionPoint {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []PositionPoint
	for i, p := range l.pos {
		if p[0] == 0 {
			continue
		}
		out = append(out, PositionPoint{T: offset + float64(i), Answers: p[0], Mean: float64(p[1]) / float64(p[0]), Max: p[2]})
	}
	return out
}

// LinePoint is the line as the tool sees it at one instant: Waiting buyers arrived and not finally answered
// (nor gone), of which ToldToWait had been answered 503 at least once.
type LinePoint struct {
	T          float64 `json:"t"`
	Waiting    int     `json:"waiting"`
	ToldToWait int     `json:"told_to_wait"`
}

// maxLinePoints bounds the line's series.
const maxLinePoints = 600

// Line is the line's length over time, at most maxLinePoints instants at least 100 ms apart, t counted in
// seconds from offset (the report's clock) (nil without buyers).
func (bl *BuyerLog) Line(offset float64) []LinePoint {
	if bl == nil {
		return nil
	}
	var arrived, told, answered, toldAnswered []int64
	for _, g := range bl.Groups {
		arrived = append(arrived, g.ArrivedUS...)
		answered = append(answered, g.AnsweredUS...)
		for i, w := range g.FirstWaitUS {
			if w >= 0 {
				told = append(told, w)
				toldAnswered = append(toldAnswered, g.AnsweredUS[i])
			}
		}
	}
	if len(arrived) == 0 {
		return nil
	}
	for _, s := range [][]int64{arrived, told, answered, toldAnswered} {
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	}
	upTo := func(s []int64, t int64) int { return sort.Search(len(s), func(i int) bool { return s[i] > t }) }
	end := answered[len(answered)-1]
	step := max(int64(100_000), int64(math.Ceil(float64(end)/maxLinePoints)))
	var out []LinePoint
	for t := int64(0); ; t += step {
		out = append(out, LinePoint{T: offset + float64(t)/1e6,
			Waiting: upTo(arrived, t) - upTo(answered, t), ToldToWait: upTo(told, t) - upTo(toldAnswered, t)})
		if t > end {
			break
		}
	}
	return out
}
