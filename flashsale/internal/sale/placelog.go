package sale

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ordersaga/ordersaga"
)

// The run's order requests, as the undersold check (verdict_undersold.go) needs them: when each was first
// sent, when its last answer came, its lines and what its answers said. One request is one Idempotency-Key:
// a resend, a racing duplicate and the ask again after a lost answer are the same request.

// PlaceGroup is the run's requests that sent the same lines and ended the same way. Request i was first sent at
// SentUS[i] and last answered at AnsweredUS[i], in microseconds from PlaceLog.From. The times are columns, not
// an object per request, so that a sale of a million requests stays small in memory (16 bytes a request) and
// in report.json.
type PlaceGroup struct {
	Lines []ordersaga.Line `json:"lines"`
	// Outcome is accepted (an answer was 201); error (none was, and an answer was neither 201 nor a refusal,
	// or never came: the request may hold units); else every answer was a refusal and it is the last one's,
	// sold_out or limit_exceeded.
	Outcome string `json:"outcome"`
	// SKU is the SKU the refusals named ("" when they named none, or not all the same one).
	SKU        string  `json:"sku,omitempty"`
	SentUS     []int64 `json:"sent_us"`
	AnsweredUS []int64 `json:"answered_us"`
}

// PlaceLog is every order request a sale sent (the flood pair keeps none: it has no verdict).
type PlaceLog struct {
	// From is when the firing started. The times count from it on the tool's monotonic clock, taken before a
	// request is written and after its answer is read, and rounded outwards to the microsecond (a send down,
	// an answer up): the recorded window of a request always contains the one the stack saw.
	From   time.Time    `json:"from"`
	Groups []PlaceGroup `json:"groups"`

	at map[string]int // group index by placeGroupKey (rebuilt on first add after decoding)
}

func placeGroupKey(lines []ordersaga.Line, outcome, sku string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s", outcome, sku)
	for _, l := range lines {
		fmt.Fprintf(&b, "|%s×%d", l.SKU, l.Qty)
	}
	return b.String()
}

// add records one request.
func (pl *PlaceLog) add(lines []ordersaga.Line, outcome, sku string, sentUS, answeredUS int64) {
	if pl.at == nil {
		pl.at = make(map[string]int, len(pl.Groups))
		for i, g := range pl.Groups {
			pl.at[placeGroupKey(g.Lines, g.Outcome, g.SKU)] = i
		}
	}
	key := placeGroupKey(lines, outcome, sku)
	i, ok := pl.at[key]
	if !ok {
		i = len(pl.Groups)
		pl.at[key] = i
		pl.Groups = append(pl.Groups, PlaceGroup{Lines: lines, Outcome: outcome, SKU: sku})
	}
	g := &pl.Groups[i]
	g.SentUS = append(g.SentUS, sentUS)
	g.AnsweredUS = append(g.AnsweredUS, answeredUS)
}

// placeOutcome is what one answer to POST /v1/orders says of the units its request may hold: accepted (201),
// a refusal that holds none of the SKU it names (sold out, the per-user limit), or OutError for anything else
// (no answer, a 5xx, a key still deciding, any other 4xx), after which the request may still hold units.
func placeOutcome(a Answer, err error) Outcome {
	switch {
	case err != nil:
		return OutError
	case a.Status == http.StatusCreated:
		return OutAccepted
	case a.Status == http.StatusConflict && soldOut(a.Problem):
		return OutSoldOut
	case a.Status == http.StatusConflict && limitExceeded(a.Problem):
		return OutLimitExceeded
	}
	return OutError
}

// placeNote is what the run has learnt of one request so far (guarded by placeLog.mu).
type placeNote struct {
	lines          []ordersaga.Line
	sends          int
	sent, answered time.Duration
	accepted       bool // an answer was 201
	unsure         bool // an answer was OutError
	refusals       int
	refusal        Outcome       // the last refusal's kind
	refusalAt      time.Duration // and when it came
	sku            string        // the SKU the refusals named
	skuMixed       bool          // they did not all name the same one
}

// placeLog collects the run's requests while it fires. Safe for concurrent use.
type placeLog struct {
	from time.Time
	mu   sync.Mutex
	log  PlaceLog
}

// newPlaceLog starts the clock of the requests' times.
func newPlaceLog() *placeLog {
	now := time.Now()
	return &placeLog{from: now, log: PlaceLog{From: now}}
}

// since is the time on the log's clock (monotonic: the wall clock may jump during a run).
func (l *placeLog) since() time.Duration { return time.Since(l.from) }

// answered notes one answer (or its absence) to a send of n's request, sent and answered at those times.
func (l *placeLog) answered(n *placeNote, sent, answered time.Duration, out Outcome, sku string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n.sends == 0 || sent < n.sent {
		n.sent = sent
	}
	n.sends++
	n.answered = max(n.answered, answered)
	switch out {
	case OutAccepted:
		n.accepted = true
	case OutSoldOut, OutLimitExceeded:
		if n.refusals > 0 && sku != n.sku {
			n.skuMixed = true
		}
		n.sku = sku
		if n.refusals == 0 || answered >= n.refusalAt {
			n.refusal, n.refusalAt = out, answered
		}
		n.refusals++
	default:
		n.unsure = true
	}
}

// done logs n's request once no more answers to it will come.
func (l *placeLog) done(n *placeNote) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n.sends == 0 {
		return
	}
	out, sku := n.refusal, n.sku
	switch {
	case n.accepted:
		out, sku = OutAccepted, ""
	case n.unsure:
		out, sku = OutError, ""
	case n.skuMixed:
		sku = ""
	}
	const us = time.Microsecond
	l.log.add(n.lines, out.String(), sku, int64(n.sent/us), int64((n.answered+us-1)/us))
}

// snapshot is a copy of the log, its groups in a stable order (nil without a log: the run fired nothing).
func (l *placeLog) snapshot() *PlaceLog {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &PlaceLog{From: l.log.From, Groups: make([]PlaceGroup, len(l.log.Groups))}
	for i, g := range l.log.Groups {
		g.SentUS, g.AnsweredUS = append([]int64(nil), g.SentUS...), append([]int64(nil), g.AnsweredUS...)
		out.Groups[i] = g
	}
	sort.Slice(out.Groups, func(a, b int) bool {
		ga, gb := out.Groups[a], out.Groups[b]
		return placeGroupKey(ga.Lines, ga.Outcome, ga.SKU) < placeGroupKey(gb.Lines, gb.Outcome, gb.SKU)
	})
	return out
}
