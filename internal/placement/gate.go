package placement

import (
	"context"
	"time"
)

// The admission gate counts the units of the orders being placed (admission.Gate.Admit) and refuses a request
// while every unit left of a SKU is counted so. That refusal is not an answer: the placements that count the
// units decide within their deadline and hand them back, and a placement's units are counted twice, by the gate
// and by the stock counter, from its reserve until its answer. So a refused request waits for them, asking
// Redis again with a growing pause, until it is admitted, Redis says the SKU has too few units for it (the
// fast path's sold out, a truthful answer), or Config.GatedWait has passed (Gated: 503, retry). It holds
// nothing while it waits. A buyer is never told "sold out" for units that are only being placed (the flash-sale
// tool's undersold check).

// DefaultGatedWait is how long a request the admission gate refuses waits for the placements in flight by
// default.
const DefaultGatedWait = 5 * time.Second

const (
	gateFirstPause = 5 * time.Millisecond   // the first pause of a refused request
	gateMaxPause   = 100 * time.Millisecond // the longest, which a crowd of waiters' checks share (CheckOrder)
)

// gateWaiter paces one request the admission gate refused.
type gateWaiter struct {
	until time.Time
	pause time.Duration
	sku   string // the SKU the gate refused last
}

func (p *placement) gateWaiter() *gateWaiter {
	return &gateWaiter{until: time.Now().Add(p.s.cfg.GatedWait), pause: gateFirstPause}
}

// wait pauses, then reads Redis's answer for the request again (fast). done is true when the request is to
// be answered out: Gated when the wait is over (or the request's context ended), Unavailable when Redis fails.
// Redis unreachable with the database-only path on is not done: the placement goes on without the gate.
func (w *gateWaiter) wait(ctx context.Context, p *placement, marker string) (fast fastCheck, out Outcome, done bool) {
	left := time.Until(w.until)
	if left <= 0 {
		return fast, Outcome{Kind: Gated, SKU: w.sku}, true
	}
	t := time.NewTimer(min(w.pause, left))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return fast, Outcome{Kind: Gated, SKU: w.sku}, true
	}
	w.pause = min(2*w.pause, gateMaxPause)
	fast, err := p.s.checkOrder(ctx, marker, p.req.UserID, p.req.Lines)
	if err != nil && p.redisFails(err) {
		return fast, unavailable(serviceRedis, err), true
	}
	return fast, Outcome{}, false
}

// admitNew admits the lines of a key without state (*adm is set) before anything is done for it, holding one
// of the process's places for its placement (release gives it back); when ok is false, out is the answer. A
// key that gets state while it waits (a concurrent request with it claimed it) goes on without an admission,
// to be admitted after its claim like any key with state.
func (p *placement) admitNew(ctx context.Context, marker string, fast fastCheck, adm **admitted) (release func(), out Outcome, ok bool) {
	w := p.gateWaiter()
	for {
		switch {
		case p.redisDown || !fast.Ready || fast.Claimed:
			return func() {}, Outcome{}, true
		case fast.Refuse():
			return nil, fastRefusal(fast), false
		case fast.Gate():
			// The check's round trip already saw every unit left being placed: no need to ask Admit.
			w.sku = fast.GatedSKU
		default:
			// Past the placements this process runs and lets wait, a key waits a little for a place among them
			// (holding nothing), then is answered Busy rather than held past any timeout its client has.
			if !p.s.takeTicket(ctx) {
				return nil, Outcome{Kind: Busy, Placing: p.s.cfg.MaxPlacing, Queued: p.s.cfg.MaxQueued}, false
			}
			sku, err := p.admit(ctx, adm)
			switch {
			case err != nil && p.redisFails(err):
				<-p.s.tickets
				return nil, unavailable(serviceRedis, err), false
			case sku == "":
				return func() { <-p.s.tickets }, Outcome{}, true
			}
			<-p.s.tickets
			w.sku = sku
		}
		var done bool
		if fast, out, done = w.wait(ctx, p, marker); done {
			return nil, out, false
		}
	}
}

// admitClaimed admits the lines of a key with state whose order is not started (*adm is set), or finds the
// key's order started meanwhile (cur is its row, to attach to). When ok is false, out is the answer.
func (p *placement) admitClaimed(ctx context.Context, marker string, adm **admitted) (cur keyRecord, attach bool, out Outcome, ok bool) {
	w := p.gateWaiter()
	for {
		sku, err := p.admit(ctx, adm)
		switch {
		case err != nil && p.redisFails(err):
			return cur, false, unavailable(serviceRedis, err), false
		case sku == "":
			return cur, false, Outcome{}, true
		}
		w.sku = sku
		fast, out, done := w.wait(ctx, p, marker)
		if !done && (fast.SoldOutSKU != "" || fast.Limit != nil) {
			out, done = fastRefusal(fast), true
		}
		if !done {
			continue
		}
		if out.Kind == Unavailable {
			return cur, false, out, false
		}
		// A refusal may only answer a key whose order is not started: the units that filled the gate may be
		// those of the request that started this key's order since its row was read, which is attached to.
		cur, out, attach := p.refusedAfterClaim(ctx, out)
		if attach {
			return cur, true, Outcome{}, true
		}
		return cur, false, out, false
	}
}
