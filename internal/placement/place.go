package placement

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/workflows"
)

// Place places one order request and returns what became of it. It checks the SKUs exist, refuses from the
// sold-out fast path when Redis already says no and the key has no state (one Redis round trip, no
// database), else claims the idempotency key, checks again, places the order (Update-with-Start) and returns
// once the reservation is decided; a key with a kept first answer gets it again (Replayed).
//
// The error is ErrInvalidRequest for a request that breaks the rulebook (nothing is done), or a failure
// that is no outcome of the contract (the order's workflow failed in a way nobody expects): Outcome.OrderID
// then names the order, and a retry with the same key is safe. Every other failure is an Unavailable
// outcome.
func (s *Service) Place(ctx context.Context, req Request) (Outcome, error) {
	if err := req.check(); err != nil {
		return Outcome{}, err
	}
	req = req.canonical()
	p := &placement{s: s, store: s.cfg.Store, stock: s.cfg.Stock, req: req, fingerprint: req.fingerprint(), arrived: time.Now()}
	return p.run(ctx)
}

// placement is one Place.
type placement struct {
	s           *Service
	store       Store
	stock       Stock
	req         Request // canonical
	fingerprint string
	// redisDown: a Redis call found Redis unreachable and the database-only path is on; the placement
	// calls Redis no more.
	redisDown bool
	// markerUntil is when the key's marker expires at the earliest, as far as this placement knows (zero:
	// unknown); fenced: it raised the markers' fence, which covers its key until every live key is marked
	// again. A write of the row that extends its life must leave the marker living at least as long (cover).
	markerUntil time.Time
	fenced      bool
	// shards is the shard count of each line's SKU whose stock Redis has split, as the fast path read it:
	// the order placed walks that many shards for its life (nil: none split, or Redis not read).
	shards map[string]int
	// arrived is when this request arrived: its ticket's first arrival, if it takes one.
	arrived time.Time
	// marker is the name of the key's marker in Redis (MarkerName), which also names its ticket in a line.
	marker string
}

func (p *placement) run(ctx context.Context) (out Outcome, err error) {
	unknown, err := p.s.unknownSKU(ctx, p.req.Lines)
	if err != nil {
		return unavailable(serviceDatabase, err), nil
	}
	if unknown != "" {
		return Outcome{Kind: UnknownSKU, SKU: unknown}, nil
	}
	// The fast path: in a flash sale almost every request ends here, so it reads Redis only. It may only
	// refuse, and only a key without state in the database (whose first answer was never kept).
	p.marker = MarkerName(p.req.UserID, p.req.Key)
	marker := p.marker
	fast, err := p.s.checkOrder(ctx, marker, p.req.UserID, p.req.Lines)
	// Redis unreachable with the database-only path on (redisFails false): no fast path, no admission gate and
	// no marker; the order's reserve goes to the database alone (the worker's fallback), and the markers' fence
	// keeps every process off the fast path until this key's marker is written.
	if err != nil && p.redisFails(err) {
		return unavailable(serviceRedis, err), nil
	}
	if fast.Refuse() {
		if sku := fast.SoldOutSKU; sku != "" {
			// A sold-out SKU has no line a buyer can wait in: its holders are answered here, at once.
			p.s.cfg.Line.Seen(Turn{SKU: sku, SoldOut: true})
		}
		return fastRefusal(fast), nil
	}
	p.shards = fast.Shards
	// The line and the admission gate (gate.go): a request is placed in its turn, oldest first, and only while
	// units are left that other placements do not count (a flash sale starts about as many workflows as it has
	// units, not one per buyer). It never refuses a key whose order is started. A key without state waits its
	// turn before the database is touched; the others after their claim. The admission's units stay counted
	// until place hands them back, or this request ends before: answered to come back (a store unreachable
	// before its order started), it also keeps its place in the line.
	var adm *admitted
	defer func() {
		if out.Kind == Unavailable && ctx.Err() == nil {
			adm.GiveBack(context.WithoutCancel(ctx))
			return
		}
		adm.Done(context.WithoutCancel(ctx))
	}()
	if fast.Ready && !fast.Claimed && !p.redisDown {
		if out, ok := p.waitTurn(ctx, marker, &adm); !ok {
			return out, nil
		}
	}
	// A key without a row, or whose row was unused for its life and has no order open, gets a new life: a new
	// nonce, and order IDs derived from it. A use of a live key is its last use from now on (Refreshed, when
	// the claim wrote it).
	nonce := NewNonce()
	claimed := time.Now()
	rec, fresh, err := p.store.ClaimIdempotencyKey(ctx, keyClaim{
		UserID: p.req.UserID, Key: p.req.Key, Fingerprint: p.fingerprint, Nonce: nonce,
		OrderID: OrderID(p.req.UserID, p.req.Key, nonce, 0),
	}, p.s.cfg.Retention)
	if err != nil {
		return unavailable(serviceDatabase, err), nil
	}
	// Marked after the row is written: a key with a live row always has a marker that lives at least as long,
	// or the markers are not ready, or the fence is up. The writer of a life, or of its last use, sets it over
	// any earlier life's (its nonce, a full life's TTL); another request sets it where Redis has none (one
	// that expired, or one its writer has not set yet) or makes the same life's live as long as the row,
	// never over a newer life's. A marker found by the fast path already lives as long as the row read.
	wrote := fresh || rec.Refreshed
	switch {
	case !wrote && fast.Claimed:
		p.markerUntil = claimed.Add(p.s.life - rec.Age)
	case !p.redisDown:
		m := p.s.markerOf(p.marker, rec.Nonce, rec.Age, wrote)
		err := p.stock.MarkClaimed(ctx, m)
		switch {
		case err == nil:
			p.markerUntil = claimed.Add(m.TTL)
		case errors.Is(err, admission.ErrMarkersNotReplicated):
			// On the master, not yet on its replicas, so a failover could lose it: the placement goes on as
			// if unmarked, and cover marks the key again, or raises the fence, before its order starts.
			p.s.cfg.Logger.Warn("idempotency marker not acknowledged by the replicas", "order_id", rec.OrderID, "error", err)
		case p.redisFails(err):
			if rec.Refreshed {
				// The row lives a life more without its marker: no process may answer it from the fast path.
				if ferr := p.s.raiseFence(ctx); ferr != nil {
					return unavailable(serviceDatabase, ferr), nil
				}
			}
			return unavailable(serviceRedis, err), nil
		}
	}
	if rec.Refreshed {
		if err := p.cover(ctx, rec); err != nil {
			return unavailable(serviceDatabase, err), nil
		}
	}
	if rec.Fingerprint != p.fingerprint {
		return Outcome{Kind: KeyReused}, nil
	}
	if rec.Answered() {
		return replay(rec), nil
	}
	// An order that is already final is answered from the database, never placed again: once Temporal has
	// forgotten its workflow (retention), a new run under the same order ID would be a second life of it.
	if o, err := p.store.Order(ctx, rec.OrderID); err == nil && o.Status.Final() {
		return p.answer(ctx, rec, reservationOf(o.View())), nil
	} else if err != nil && !errors.Is(err, errNotFound) {
		return unavailable(serviceDatabase, err), nil
	}

	// The fast path may only refuse. It answers only while no request has started this generation's
	// workflow: one that has is deciding, and every request with the key answers as it does.
	if !rec.Started && !p.redisDown {
		again, err := p.stock.CheckOrder(ctx, marker, p.req.UserID, p.req.Lines)
		if err != nil && p.redisFails(err) {
			return unavailable(serviceRedis, err), nil
		}
		if again.SoldOutSKU != "" || again.Limit != nil {
			cur, out, attach := p.refusedAfterClaim(ctx, fastRefusal(again))
			if !attach {
				return out, nil
			}
			rec = cur
		}
	}
	switch {
	case rec.Started && adm != nil:
		// Another request started the order meanwhile: this one attaches to it and needs no units.
		adm.Done(context.WithoutCancel(ctx))
		adm = nil
	case !rec.Started && adm == nil && !p.redisDown:
		cur, attach, out, ok := p.admitClaimed(ctx, marker, &adm)
		if !ok {
			return out, nil
		}
		if attach {
			rec = cur
		}
	}
	if err := p.store.MarkIdempotencyStarted(ctx, p.req.UserID, p.req.Key, rec.OrderID); err != nil {
		return unavailable(serviceDatabase, err), nil
	}
	if !rec.Started {
		// Before its order starts the key has a marker that lives as long as its row, or the fence is up: no
		// process answers a retry of it from the fast path.
		if err := p.cover(ctx, rec); err != nil {
			return unavailable(serviceDatabase, err), nil
		}
	}
	held := adm
	adm = nil // place hands the units back once the reservation is decided
	res, err := p.place(ctx, rec.OrderID, held)
	if err != nil {
		var down *serviceerror.Unavailable
		switch {
		case errors.As(err, &down):
			return unavailable(serviceTemporal, err), nil
		case errors.Is(err, errStillDeciding):
			return Outcome{Kind: Pending, OrderID: rec.OrderID}, nil
		}
		return Outcome{OrderID: rec.OrderID}, err
	}
	return p.answer(ctx, rec, res), nil
}

// answer is the outcome of a decided reservation: the order reserved (its answer kept for replays), or the
// rejection.
func (p *placement) answer(ctx context.Context, rec keyRecord, res workflows.Reservation) Outcome {
	if res.Order.Status != ordersaga.StatusRejected {
		return p.reserved(ctx, rec, res.Order)
	}
	// A rejection is not remembered: the key moves to a new order ID, so a retry is a new order (the rejected
	// one's tombstones are final).
	next := OrderID(p.req.UserID, p.req.Key, rec.Nonce, rec.Generation+1)
	if err := p.store.NextIdempotencyGeneration(ctx, p.req.UserID, p.req.Key, rec.OrderID, next); err != nil {
		p.s.cfg.Logger.Warn("move idempotency key past a rejected order; a retry replays the rejection", "order_id", rec.OrderID, "error", err)
	} else {
		p.coverOrWarn(ctx, rec)
	}
	switch {
	case res.SoldOutSKU != "":
		return soldOut(res.SoldOutSKU, false)
	case res.LimitExceeded != nil:
		return limitExceeded(*res.LimitExceeded, false)
	case res.UnknownSKU != "":
		return Outcome{Kind: UnknownSKU, SKU: res.UnknownSKU}
	}
	return Outcome{Kind: Rejected, OrderID: rec.OrderID, Reason: res.Order.ClosedReason}
}

// reserved is the outcome of a reserved order, whose answer is kept for replays; when a concurrent request
// with the key kept its answer first, that one is the answer.
func (p *placement) reserved(ctx context.Context, rec keyRecord, o ordersaga.Order) Outcome {
	out := Outcome{Kind: Reserved, OrderID: o.OrderID, Order: o, Answer: p.s.cfg.KeepAs(o)}
	kept, stored, err := p.store.KeepIdempotentAnswer(ctx, p.req.UserID, p.req.Key, rec.OrderID, out.Answer.Status, out.Answer.Body)
	if err != nil {
		// The order is placed; a retry attaches to it and keeps the answer then.
		p.s.cfg.Logger.Warn("keep idempotent answer", "order_id", rec.OrderID, "error", err)
		return out
	}
	if !stored && kept.Answered() && kept.OrderID == rec.OrderID {
		return replay(kept)
	}
	if stored {
		p.coverOrWarn(ctx, rec)
	}
	return out
}

// cover makes the key's marker live at least a life past now, after a write of the key's row that made now its
// last use (or before its order starts): unless the marker this placement knows of does already, it sets it
// over any other (the write made the row's life the current one for at least the retention); where it cannot
// (Redis unreachable or failing), it raises the markers' fence, so that no process answers the key from the
// fast path until every live key is marked again. The error is the fence's.
func (p *placement) cover(ctx context.Context, rec keyRecord) error {
	if p.fenced || !time.Now().Add(p.s.life).After(p.markerUntil) {
		return nil
	}
	if !p.redisDown {
		start := time.Now()
		m := p.s.markerOf(p.marker, rec.Nonce, 0, true)
		err := p.stock.MarkClaimed(ctx, m)
		if err == nil {
			p.markerUntil = start.Add(m.TTL)
			return nil
		}
		p.redisFails(err) // Redis unreachable and the database-only path on: no more Redis calls
		p.s.cfg.Logger.Warn("mark idempotency key: the markers' fence is raised instead", "order_id", rec.OrderID, "error", err)
	}
	if err := p.s.raiseFence(ctx); err != nil {
		return err
	}
	p.fenced = true
	return nil
}

// coverOrWarn is cover after an answer, which stands whatever cover does: a failure is logged.
func (p *placement) coverOrWarn(ctx context.Context, rec keyRecord) {
	if err := p.cover(ctx, rec); err != nil {
		p.s.cfg.Logger.Error("idempotency key used without its marker or the markers' fence: a retry may be answered from the sold-out fast path",
			"order_id", rec.OrderID, "error", err)
	}
}

// refusedAfterClaim decides a refusal (the fast path's recheck, or the admission gate) that came after the key
// was claimed. A refusal may only answer a key whose order is not started, and the row read at the claim may
// be stale by now (a concurrent request with the key may have started the order since), so the row is read
// again: an answer kept is replayed; a key still not started gets the refusal. When the order is started,
// attach is true and cur is the row to attach to it with.
func (p *placement) refusedAfterClaim(ctx context.Context, refusal Outcome) (cur keyRecord, out Outcome, attach bool) {
	cur, err := p.store.IdempotencyKey(ctx, p.req.UserID, p.req.Key)
	switch {
	case err != nil:
		return cur, unavailable(serviceDatabase, err), false
	case cur.Answered():
		return cur, replay(cur), false
	case !cur.Started:
		return cur, refusal, false
	}
	return cur, Outcome{}, true
}

// redisFails reports whether a Redis call's error fails the request (Unavailable). When Redis is unreachable
// and the database-only path is on it does not: the placement goes on without Redis and calls it no more.
func (p *placement) redisFails(err error) bool {
	if p.s.placesWithoutRedis(err) {
		p.redisDown = true
		return false
	}
	return true
}
