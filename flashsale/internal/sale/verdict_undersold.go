package sale

import (
	"fmt"
	"sort"
	"time"
)

// checkUndersold judges every sold-out answer the run got against the units the run's own requests could have
// taken by then: a buyer told "sold out" while a unit was neither held nor sold is a sale lost, e.g. by a
// reserve that looked at one shard of a SKU's stock while another still had units. Seen from outside, through
// the answers alone, and sound: it may miss a wrong answer but never flags a right one, whatever the timing.
//
// Per SKU s of stock S (the stock the run set, less the holds from before the run, SKUSnapshot.StartAvailable),
// U(x) is the units of s of every request first sent at or before x that may hold some: every request but a
// refusal of s (sold out, or the per-user limit), whose answer says it took nothing of s. Accepted, failed,
// timed-out and never answered requests all count, and units given back (cancels, expiries, late refusals) are
// never taken off, so U(x) is at least the units held or sold at any instant up to x: the stack can only have
// handled a request after the tool sent it, and answered one before the tool read the answer (placelog.go
// rounds both outwards). A sold-out answer for q units of s read at a is then wrong when U(a) + q ≤ S: at
// whatever instant the stack decided it, S − U(a) ≥ q units were free. An answer that names no SKU is judged
// only when that holds for each of its lines, and counts on each.
//
// A refused request may still have held its other lines for a moment (a multi-line reserve holds the lines
// before the one it refuses, then gives them back): those count in U, and all its lines do when its refusals
// named no SKU, or not all the same one (one try may have held what another was refused). The run sets the
// stock once, before it fires, and never restocks (a restock would have to raise S from its time on). Its SKUs
// are its own (named after the run unless --sku-prefix): orders from elsewhere during the run would take units
// U does not see. The flood pair's sold-out answers are not judged: it has no verdict, and its flooded SKU has
// no stock at all.
//
// The count is, per SKU, the most units found free at one wrong answer; the one finding per SKU says how
// many answers were wrong.
func checkUndersold(j *judge, s Snapshot) {
	if s.Places == nil {
		return
	}
	stock := map[string]int64{}
	for _, sku := range s.SKUs {
		stock[sku.SKU] = sku.Initial
		if a := sku.StartAvailable; a != nil && *a < sku.Initial {
			stock[sku.SKU] = *a
		}
	}
	taken := takenBySKU(s.Places.Groups)
	type wrong struct {
		answers     int
		free, q, at int64
	}
	worst := map[string]*wrong{}
	for _, g := range s.Places.Groups {
		if g.Outcome != OutSoldOut.String() {
			continue
		}
		lines := g.Lines
		if sku := refusedSKU(g); sku != "" {
			lines = nil
			for _, l := range g.Lines {
				if l.SKU == sku {
					lines = append(lines, l)
				}
			}
		}
		known := len(lines) > 0 // a SKU of the run's, named by a line of the request
		for _, l := range lines {
			_, ok := stock[l.SKU]
			known = known && ok
		}
		if !known {
			continue
		}
		j.v.SoldOutJudged += len(g.AnsweredUS)
		for _, at := range g.AnsweredUS {
			free := true
			for _, l := range lines {
				free = free && taken[l.SKU].upTo(at)+l.Qty <= stock[l.SKU]
			}
			if !free {
				continue
			}
			for _, l := range lines {
				free := stock[l.SKU] - taken[l.SKU].upTo(at)
				w := worst[l.SKU]
				if w == nil {
					w = &wrong{}
					worst[l.SKU] = w
				}
				w.answers++
				if free > w.free || free == w.free && at < w.at {
					w.free, w.q, w.at = free, l.Qty, at
				}
			}
		}
	}
	skus := make([]string, 0, len(worst))
	for sku := range worst {
		skus = append(skus, sku)
	}
	sort.Strings(skus)
	for _, sku := range skus {
		w := worst[sku]
		at := time.Duration(w.at) * time.Microsecond
		j.bad(Finding{Check: CheckUndersold, Source: SourceAPI, SKU: sku, N: w.free,
			Detail: fmt.Sprintf("%d sold-out answers while units were free; the worst: told sold out for %d units at %s (%s into the firing) while at most %d of %d units could be held or sold",
				w.answers, w.q, s.Places.From.Add(at).UTC().Format("15:04:05.000000"), at, stock[sku]-w.free, stock[sku])})
	}
}

// refusedSKU is the SKU a refusal took nothing of: the one it named, or its only line's ("" for a group that
// is no refusal, or a refusal of several lines that named none).
func refusedSKU(g PlaceGroup) string {
	if g.Outcome != OutSoldOut.String() && g.Outcome != OutLimitExceeded.String() {
		return ""
	}
	if g.SKU == "" && len(g.Lines) == 1 {
		return g.Lines[0].SKU
	}
	return g.SKU
}

// sends is the units of one SKU the run's requests may have taken, by when they were first sent: at sorted,
// sum[i] the units of the first i sends.
type sends struct {
	at, sum []int64
}

// upTo is the units of the requests sent at or before t (0 for a nil s: no request may hold the SKU).
func (s *sends) upTo(t int64) int64 {
	if s == nil {
		return 0
	}
	return s.sum[sort.Search(len(s.at), func(i int) bool { return s.at[i] > t })]
}

// takenBySKU is, per SKU, the sends that may hold units of it: every line of every request, but the line a
// refusal names.
func takenBySKU(groups []PlaceGroup) map[string]*sends {
	type send struct{ at, qty int64 }
	all := map[string][]send{}
	for _, g := range groups {
		refused := refusedSKU(g)
		for _, l := range g.Lines {
			if l.SKU == refused {
				continue
			}
			for _, at := range g.SentUS {
				all[l.SKU] = append(all[l.SKU], send{at, l.Qty})
			}
		}
	}
	out := make(map[string]*sends, len(all))
	for sku, ss := range all {
		sort.Slice(ss, func(a, b int) bool { return ss[a].at < ss[b].at })
		s := &sends{at: make([]int64, len(ss)), sum: make([]int64, len(ss)+1)}
		for i, x := range ss {
			s.at[i], s.sum[i+1] = x.at, s.sum[i]+x.qty
		}
		out[sku] = s
	}
	return out
}
