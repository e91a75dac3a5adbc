package sale

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ordersaga/ordersaga"
)

// req is one order request of a hand-built run: first sent and last answered in milliseconds into the firing.
type req struct {
	sent, answered int64
	out            Outcome
	sku            string // the SKU a refusal named ("" none)
	lines          []ordersaga.Line
}

func of(sku string, qty int64) ordersaga.Line { return ordersaga.Line{SKU: sku, Qty: qty} }

func lines(ls ...ordersaga.Line) []ordersaga.Line { return ls }

// reqs is n requests of lines sent 1 ms apart from from, each answered out at answered.
func reqs(n int, from, answered int64, out Outcome, ls []ordersaga.Line) []req {
	out2 := make([]req, n)
	for i := range out2 {
		out2[i] = req{sent: from + int64(i), answered: answered, out: out, lines: ls}
	}
	return out2
}

func soldOutAt(sent, answered int64, sku string, ls []ordersaga.Line) req {
	return req{sent: sent, answered: answered, out: OutSoldOut, sku: sku, lines: ls}
}

// runOf is a run of the SKUs of the given stocks ("A" 100 …) that sent rs.
func runOf(stock map[string]int64, rs ...[]req) Snapshot {
	s := Snapshot{TakenAt: t0, Quiet: true, Places: &PlaceLog{From: t0}}
	for _, sku := range slices.Sorted(func(yield func(string) bool) {
		for k := range stock {
			if !yield(k) {
				return
			}
		}
	}) {
		s.SKUs = append(s.SKUs, SKUSnapshot{SKU: sku, Initial: stock[sku]})
	}
	for _, group := range rs {
		for _, r := range group {
			s.Places.add(r.lines, r.out.String(), r.sku, r.sent*1000, r.answered*1000)
		}
	}
	return s
}

// undersold judges s and returns the undersold count, its findings (by SKU) and the sold-out answers judged.
func undersold(s Snapshot) (int64, map[string]Finding, int) {
	v := Check(s)
	fs := map[string]Finding{}
	for _, f := range v.Findings {
		if f.Check == CheckUndersold {
			fs[f.SKU] = f
		}
	}
	if v.UndersoldUnits != v.BySource[SourceAPI].UndersoldUnits {
		panic("undersold_units is the api's")
	}
	return v.UndersoldUnits, fs, v.SoldOutJudged
}

// The shard bug: 100 units, 60 accepted, then a buyer told sold out: 40 units were free whatever the 60 did.
func TestUndersoldFlagsSoldOutWithUnitsFree(t *testing.T) {
	a1 := lines(of("A", 1))
	s := runOf(map[string]int64{"A": 100}, reqs(60, 0, 80, OutAccepted, a1), []req{soldOutAt(100, 105, "A", a1)})
	n, fs, judged := undersold(s)
	if n != 40 || judged != 1 {
		t.Fatalf("undersold_units = %d (judged %d), want 40 (1): %v", n, judged, fs)
	}
	f := fs["A"]
	if f.Source != SourceAPI || f.N != 40 || !strings.Contains(f.Detail, "1 sold-out answers") || !strings.Contains(f.Detail, "at most 60 of 100 units") {
		t.Errorf("finding %+v", f)
	}
}

// The requests sent before the answer could hold the rest: accepted, still unanswered when it came (answered
// after it, even refused), or answered an error; and at exactly one unit free it is flagged.
func TestUndersoldCountsEveryRequestSentBeforeTheAnswer(t *testing.T) {
	a1 := lines(of("A", 1))
	cases := []struct {
		name string
		more []req
		want int64
	}{
		{"the other 40 accepted after the answer", reqs(40, 60, 200, OutAccepted, a1), 0},
		{"the other 40 answered errors (timeouts, 5xx)", reqs(40, 60, 99, OutError, a1), 0},
		{"20 accepted after the answer, 20 errors", append(reqs(20, 60, 300, OutAccepted, a1), reqs(20, 80, 150, OutError, a1)...), 0},
		{"a request sent at the very instant of the answer", append(reqs(39, 60, 300, OutAccepted, a1), req{sent: 105, answered: 400, out: OutError, lines: a1}), 0},
		{"39 others: the last unit was free", reqs(39, 60, 200, OutAccepted, a1), 1},
		{"40 others sent after the answer", reqs(40, 106, 200, OutAccepted, a1), 40},
		{"40 refused sold out: they held nothing", reqs(40, 60, 99, OutSoldOut, a1), 40},
		{"40 refused by the per-user limit: they held nothing", reqs(40, 60, 99, OutLimitExceeded, a1), 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runOf(map[string]int64{"A": 100}, reqs(60, 0, 80, OutAccepted, a1), c.more, []req{soldOutAt(100, 105, "A", a1)})
			if n, fs, _ := undersold(s); n != c.want {
				t.Errorf("undersold_units = %d, want %d: %v", n, c.want, fs)
			}
		})
	}
}

// A unit given back (a cancel, an expiry) is never taken off: the sold-out answer after the stock was all
// accepted once is right, even though 40 of those orders were cancelled before it, and the check does not
// read the orders at all.
func TestUndersoldIgnoresUnitsGivenBack(t *testing.T) {
	a1 := lines(of("A", 1))
	s := runOf(map[string]int64{"A": 100}, reqs(100, 0, 120, OutAccepted, a1), []req{soldOutAt(500, 505, "A", a1)})
	for i := range 40 {
		id := fmt.Sprintf("o%d", i)
		s.Orders = append(s.Orders, OrderSnapshot{OrderID: id, Key: "k-" + id, Lines: a1, Status: ordersaga.StatusCancelled,
			CancelStatus: ordersaga.StatusCancelled, KeyOrderIDs: []string{id}})
	}
	if n, fs, judged := undersold(s); n != 0 || judged != 1 {
		t.Errorf("undersold_units = %d (judged %d), want 0 (1): %v", n, judged, fs)
	}
}

// Concurrency: with one unit, a request sent before the sold-out answer may have held it even when its own
// answer came after; sent after the answer, it cannot have.
func TestUndersoldRequestSentBeforeAnsweredAfter(t *testing.T) {
	a1 := lines(of("A", 1))
	before := runOf(map[string]int64{"A": 1}, []req{{sent: 0, answered: 50, out: OutAccepted, lines: a1}, soldOutAt(1, 10, "A", a1)})
	if n, fs, _ := undersold(before); n != 0 {
		t.Errorf("sent before, answered after: undersold_units = %d, want 0: %v", n, fs)
	}
	after := runOf(map[string]int64{"A": 1}, []req{{sent: 11, answered: 50, out: OutAccepted, lines: a1}, soldOutAt(1, 10, "A", a1)})
	if n, fs, _ := undersold(after); n != 1 {
		t.Errorf("sent after the answer: undersold_units = %d, want 1: %v", n, fs)
	}
}

// Orders of several lines: a named SKU is judged alone; an answer that names none only when every line had
// units free (and then on each, its own lines counted: a try before may have held any of them); a refused
// request's other lines may have been held for a moment and count.
func TestUndersoldMultiLineOrders(t *testing.T) {
	ab := lines(of("A", 1), of("B", 2))
	stock := map[string]int64{"A": 5, "B": 4}
	// bTaken: all 4 units of B accepted first.
	bTaken := func(rs ...req) []req {
		return append([]req{{sent: 0, answered: 5, out: OutAccepted, lines: lines(of("B", 4))}}, rs...)
	}
	a4 := req{sent: 1, answered: 6, out: OutAccepted, lines: lines(of("A", 4))}
	cases := []struct {
		name string
		rs   []req
		want map[string]int64 // undersold N per SKU
	}{
		{"names B, B all taken: right", bTaken(soldOutAt(10, 20, "B", ab)), nil},
		{"names A, A all free: wrong on A alone", bTaken(soldOutAt(10, 20, "A", ab)), map[string]int64{"A": 5}},
		{"names none, B all taken: could be B", bTaken(soldOutAt(10, 20, "", ab)), nil},
		{"names none, both free: wrong on each", []req{soldOutAt(10, 20, "", ab)}, map[string]int64{"A": 4, "B": 2}},
		{"names none, B free but for its own 2", []req{{sent: 0, answered: 5, out: OutAccepted, lines: lines(of("B", 1))}, soldOutAt(10, 20, "", ab)}, nil},
		{"names B; then A alone sold out: the first may have held A", bTaken(soldOutAt(0, 5, "B", ab), a4, soldOutAt(10, 20, "A", lines(of("A", 1)))), nil},
		{"names B; A sold out before it was sent: wrong", bTaken(soldOutAt(30, 35, "B", ab), a4, soldOutAt(10, 20, "A", lines(of("A", 1)))), map[string]int64{"A": 1}},
		{"a limit refusal naming B may have held A", bTaken(req{sent: 0, answered: 5, out: OutLimitExceeded, sku: "B", lines: ab}, a4, soldOutAt(10, 20, "A", lines(of("A", 1)))), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, fs, _ := undersold(runOf(stock, c.rs))
			var sum int64
			for sku, want := range c.want {
				sum += want
				if fs[sku].N != want {
					t.Errorf("%s: N = %d, want %d", sku, fs[sku].N, want)
				}
			}
			if n != sum || len(fs) != len(c.want) {
				t.Errorf("undersold_units = %d, want %d: %v", n, sum, fs)
			}
		})
	}
}

// Thousands of wrong answers make one finding per SKU: how many, and the worst (the most units free).
func TestUndersoldOneFindingPerSKU(t *testing.T) {
	a1, b1 := lines(of("A", 1)), lines(of("B", 1))
	var rs []req
	for i := range int64(3000) {
		rs = append(rs, soldOutAt(i, i+1, "A", a1), req{sent: i, answered: i + 2, out: OutAccepted, lines: a1})
	}
	rs = append(rs, soldOutAt(0, 1, "B", b1))
	n, fs, judged := undersold(runOf(map[string]int64{"A": 10, "B": 10}, rs))
	// A: the answer read at i+1 ms had i+2 requests sent before it (at 0 … i+1); with 10 units, 8 answers were
	// wrong (i = 0 … 7), the worst with 8 free. B: 10 free.
	if judged != 3001 || n != 18 || len(fs) != 2 || fs["A"].N != 8 || fs["B"].N != 10 {
		t.Fatalf("undersold_units = %d, judged %d, findings %v", n, judged, fs)
	}
	if !strings.HasPrefix(fs["A"].Detail, "8 sold-out answers") || !strings.Contains(fs["A"].Detail, "at most 2 of 10 units") {
		t.Errorf("A: %s", fs["A"].Detail)
	}
}

// Units held before the run (a SKU of an earlier run's) lower what was free; a SKU the run did not set, and a
// report without the request log, are not judged.
func TestUndersoldStockAtTheStart(t *testing.T) {
	a1 := lines(of("A", 1))
	s := runOf(map[string]int64{"A": 10}, []req{soldOutAt(0, 1, "A", a1), soldOutAt(0, 1, "Z", lines(of("Z", 1)))})
	s.SKUs[0].StartAvailable = ptr[int64](0)
	if n, fs, judged := undersold(s); n != 0 || judged != 1 {
		t.Errorf("nothing available at the start: undersold_units = %d (judged %d), want 0 (1): %v", n, judged, fs)
	}
	s.SKUs[0].StartAvailable = ptr[int64](3)
	if n, fs, _ := undersold(s); n != 3 {
		t.Errorf("3 available at the start: undersold_units = %d, want 3: %v", n, fs)
	}
	s.Places = nil
	if n, _, judged := undersold(s); n != 0 || judged != 0 {
		t.Errorf("no request log: undersold_units = %d, judged %d", n, judged)
	}
}
