package sale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersaga/ordersaga"
)

// fire sends buyers for the configured duration: at Rate per second (open loop; a request that would
// exceed Concurrency in flight is skipped and counted, never queued), or as Concurrency closed-loop
// buyers. It returns once every buyer request has been answered (a buyer told to wait keeps coming back after
// the firing's end, up to Config.Patience from its first arrival).
func (r *Runner) fire(ctx context.Context) {
	end := r.fireStart.Add(r.cfg.Duration)
	r.fireUntil = end
	fctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	buy := func(seq int64) { r.buyer(ctx, seq) }
	if r.cfg.Rate > 0 {
		openLoop(fctx, r.fireStart, r.cfg.Rate, r.cfg.Concurrency, &r.skipped, buy)
	} else {
		closedLoop(fctx, r.cfg.Concurrency, buy)
	}
	r.fireEnd = r.opts.Now()
}

// openLoop calls fn(0), fn(1), … at rate per second counted from start, each in a goroutine of its own, until
// ctx is done: a call that would exceed inflight calls at once is skipped and counted in skipped, never queued
// (an open loop offers its rate whatever the answers). It returns once every call has returned.
func openLoop(ctx context.Context, start time.Time, rate float64, inflight int, skipped *atomic.Int64, fn func(seq int64)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, inflight)
	var n int64
	for ctx.Err() == nil {
		due := int64(time.Since(start).Seconds()*rate) + 1
		for ; n < due; n++ {
			select {
			case sem <- struct{}{}:
				seq := n
				wg.Go(func() {
					defer func() { <-sem }()
					fn(seq)
				})
			default:
				skipped.Add(1)
			}
		}
		next := start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
	wg.Wait()
}

// closedLoop runs workers goroutines that each call fn with the next sequence number as soon as their last
// call returned, until ctx is done. It returns once every call has returned.
func closedLoop(ctx context.Context, workers int, fn func(seq int64)) {
	var wg sync.WaitGroup
	var n atomic.Int64
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				fn(n.Add(1) - 1)
			}
		})
	}
	wg.Wait()
}

// plan is what one buyer does, drawn from the seed and the buyer's sequence number (so a run is repeatable).
type plan struct {
	seq              int64
	key, userID, sku string
	body             []byte
	duplicate        bool
	concurrentDup    bool
	// bot marks a bot's visit: it orders again after any answer (botAttempt gives each order its own key).
	bot bool
	// waits marks a sale buyer that comes back as 503 Retry-After says (Config.Patience above 0): such a 503
	// to its request is a wait (OutWait), not an error.
	waits bool
	// resending marks the plan's resend (resend): a 503 with Retry-After to it is expected under load, as a 409
	// still deciding is (the buyer's own request waits and comes back).
	resending bool
	// note is what the answers to the key said so far, for the request log (placelog.go).
	note *placeNote
}

func (r *Runner) plan(seq int64) plan {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(seq)))
	user := rng.IntN(r.cfg.Buyers)
	p := plan{
		seq:    seq,
		key:    fmt.Sprintf("fs-%s-%d", r.cfg.RunID, seq),
		userID: fmt.Sprintf("fsu-%d", user),
		sku:    r.skus[rng.IntN(len(r.skus))],
	}
	p.duplicate = rng.Float64() < r.cfg.DuplicateRatio
	p.concurrentDup = rng.IntN(2) == 0
	if user < r.cfg.Bots() {
		// A bot never resends one key: every order it sends is a new one (botAttempt).
		p.bot, p.userID, p.duplicate = true, fmt.Sprintf("fsb-%d", user), false
	}
	p.waits = !p.bot && r.cfg.Patience > 0
	p.body = orderBody(p.userID, p.sku, r.cfg.Qty)
	p.note = &placeNote{lines: []ordersaga.Line{{SKU: p.sku, Qty: r.cfg.Qty}}}
	return p
}

// botAttempt is the k-th order of a bot's visit: the same user, SKU and body, a fresh Idempotency-Key.
func (p plan) botAttempt(runID string, k int) plan {
	p.key = fmt.Sprintf("fs-%s-%d-b%d", runID, p.seq, k)
	p.note = &placeNote{lines: p.note.lines}
	return p
}

// buyer places one order (and its duplicate, when drawn) and hands an accepted order to its follow-up; a
// bot's visit goes to bot. The request is logged once its answers are in (by resolve when it asks again).
func (r *Runner) buyer(ctx context.Context, seq int64) {
	p := r.plan(seq)
	r.sent.Add(1)
	if p.bot {
		r.bot(ctx, p)
		return
	}
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	if p.duplicate && p.concurrentDup {
		// The resend races the first request: the API must wait and answer as the first, or 409 Retry-After.
		var wg sync.WaitGroup
		wg.Go(func() { r.resend(ctx, p) })
		r.placeAsClient(ctx, p)
		wg.Wait()
		r.places.done(p.note)
		return
	}
	later := false
	if a, ok := r.placeAsClient(ctx, p); !ok && unknownOutcome(a) && !inLine(a) && ctx.Err() == nil {
		// The order may exist without the run knowing: ask again after the firing, as a client comes back
		// (a buyer that left after a 503 too: the answer said nothing was done, but the stack may be wrong).
		// Not a buyer that left the line: its answer was a place in it, and asking again would take that
		// place back (the README's open-loop sale placed hundreds of orders for buyers who had left).
		r.mu.Lock()
		r.unresolved = append(r.unresolved, p)
		r.mu.Unlock()
		later = true
	}
	if p.duplicate {
		r.resend(ctx, p)
	}
	if !later {
		r.places.done(p.note)
	}
}

// bot is a scalper's visit: up to BotAttempts orders of the same SKU as the same user, each with a fresh
// Idempotency-Key, one after the other whatever the answer (a win, sold out, the limit, an error), as long as
// the sale fires. Only the per-user limit (or the stock) stops it from getting more.
func (r *Runner) bot(ctx context.Context, p plan) {
	r.inflight.Add(1)
	defer r.inflight.Add(-1)
	for k := range r.cfg.BotAttempts {
		if k > 0 && (ctx.Err() != nil || !time.Now().Before(r.fireUntil)) {
			return
		}
		q := p.botAttempt(r.cfg.RunID, k)
		r.botRequests.Add(1)
		if a, ok := r.place(ctx, q, false); !ok && unknownOutcome(a) && ctx.Err() == nil {
			r.mu.Lock()
			r.unresolved = append(r.unresolved, q)
			r.mu.Unlock()
			continue // logged by resolve
		}
		r.places.done(q.note)
	}
}

// MaxRetryAfter caps the wait a 503's Retry-After asks of a sale buyer; jitter adds up to retryJitter of it.
const (
	MaxRetryAfter = 5 * time.Second
	minRetryAfter = 100 * time.Millisecond
	retryJitter   = 0.2
)

// isWait reports whether an answer asks the buyer to come back later: 503 with Retry-After.
func isWait(a Answer) bool { return a.Status == http.StatusServiceUnavailable && a.HasRetryAfter }

// retryWait is how long a buyer waits after a Retry-After of d: d within [minRetryAfter, MaxRetryAfter], plus
// a jitter of up to retryJitter of it (u in [0, 1)), so that a crowd told the same does not come back in
// lockstep.
func retryWait(d time.Duration, u float64) time.Duration {
	d = min(max(d, minRetryAfter), MaxRetryAfter)
	return d + time.Duration(u*retryJitter*float64(d))
}

// placeAsClient places p's order as a shop's client does: answered 503 with Retry-After, it waits as told
// (retryWait) and sends the same Idempotency-Key and body again, until a final answer, or until its patience
// (Config.Patience from its first arrival) is over: it then leaves without an answer, at that instant. A
// buyer without p.waits sends once. The visit goes to the buyer log; the answer returned is the last one.
func (r *Runner) placeAsClient(ctx context.Context, p plan) (Answer, bool) {
	v := &visit{sku: p.sku, firstWait: -1}
	defer r.buyers.add(v)
	rng := rand.New(rand.NewPCG(r.cfg.Seed^0x6a09e667f3bcc908, uint64(p.seq)))
	for {
		sent := r.places.since()
		if !v.started {
			v.arrived, v.started = sent, true
		}
		a, ok := r.place(ctx, p, false)
		at := r.places.since()
		v.answered = at
		if a.Position >= 0 {
			r.buyers.position(at, a.Position)
		}
		if !p.waits || !isWait(a) {
			v.outcome = buyerOutcome(a, ok)
			return a, ok
		}
		v.waits++
		if v.firstWait < 0 {
			v.firstWait = at
		}
		d := retryWait(a.RetryAfter, rng.Float64())
		left := v.arrived + r.cfg.Patience - at
		leaves := d > left
		if leaves {
			d = max(left, 0)
		}
		slept := sleepCtx(ctx, d)
		now := r.places.since()
		v.waited += now - at
		if leaves || !slept {
			v.answered, v.outcome = now, BuyerGaveUp
			return a, false
		}
	}
}

// buyerOutcome is what a buyer's final answer was (BuyerPlaced … BuyerError).
func buyerOutcome(a Answer, ok bool) string {
	switch {
	case ok:
		return BuyerPlaced
	case a.Status == http.StatusConflict && soldOut(a.Problem):
		return BuyerSoldOut
	case a.Status == http.StatusConflict && limitExceeded(a.Problem):
		return BuyerLimitExceeded
	}
	return BuyerError
}

// unknownOutcome reports whether an answer leaves open whether the order was created: no answer, or a 5xx.
func unknownOutcome(a Answer) bool { return a.Status == 0 || a.Status >= 500 }

// resolve asks again, with the same key, for every buyer whose request got no usable answer, so that every
// order the API created is known and followed: up to three passes a few seconds apart, all bounded by
// QuietTimeout (an overloaded stack may not answer at all). It returns how many stay unknown, and logs every
// request it was given, answered or not.
func (r *Runner) resolve(ctx context.Context) int {
	r.mu.Lock()
	todo := r.unresolved
	r.unresolved = nil
	r.mu.Unlock()
	defer func(all []plan) {
		for _, p := range all {
			r.places.done(p.note)
		}
	}(todo)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.QuietTimeout)
	defer cancel()
	for pass := 0; pass < 3 && len(todo) > 0; pass++ {
		if pass > 0 && !sleepCtx(rctx, 2*time.Second) {
			break
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			left []plan
		)
		sem := make(chan struct{}, 64)
		for _, p := range todo {
			select {
			case sem <- struct{}{}:
			case <-rctx.Done():
			}
			if rctx.Err() != nil {
				mu.Lock()
				left = append(left, p)
				mu.Unlock()
				continue
			}
			wg.Go(func() {
				defer func() { <-sem }()
				a, ok := r.place(rctx, p, true)
				if !ok && (unknownOutcome(a) || a.Status == http.StatusConflict && !refused(a)) {
					mu.Lock()
					left = append(left, p)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		todo = left
	}
	return len(todo)
}

// resend sends the same request again; a 409 with Retry-After (the first is still deciding) is retried.
func (r *Runner) resend(ctx context.Context, p plan) {
	p.resending = true
	for attempt := 0; attempt < 5; attempt++ {
		a, ok := r.place(ctx, p, true)
		if ok || a.Status != http.StatusConflict || refused(a) || a.RetryAfter <= 0 && attempt > 0 {
			return
		}
		wait := min(max(a.RetryAfter, 100*time.Millisecond), 2*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// place sends one POST /v1/orders and records it (its times and answer in p's note); ok is true on 201.
func (r *Runner) place(ctx context.Context, p plan, dup bool) (Answer, bool) {
	sent := r.places.since()
	a, o, err := r.c.PlaceOrder(ctx, p.key, p.body)
	// Sold out and the limit are normal answers, not errors (limit exceeded: the user holds its limit of the SKU).
	out := placeOutcome(a, err)
	r.places.answered(p.note, sent, r.places.since(), out, a.Problem.SKU)
	if dup && (out != OutError || err == nil && a.Status == http.StatusConflict) {
		out = OutDuplicate // a resend; a 409 that refuses nothing is the first still deciding, expected when racing
	}
	if dup && p.resending && p.waits && err == nil && isWait(a) {
		out = OutDuplicate
	}
	if !dup && p.waits && err == nil && isWait(a) {
		// A place in the line: the buyer comes back as told (placeAsClient). The request log still counts the
		// request as one that may hold units (placeOutcome: OutError), which keeps the undersold check sound.
		r.stats.Record(OutWait, a.Latency)
		return a, false
	}
	if out == OutError && ctx.Err() != nil {
		return a, false // the run is stopping (or the resolution's time is up): not the stack's error
	}
	r.stats.Record(out, a.Latency)
	if out == OutError {
		r.stats.Error(errorKind(a, err), failure(a, err))
		return a, false
	}
	if err != nil || a.Status != http.StatusCreated {
		return a, false
	}
	if o.OrderID == "" {
		r.stats.Error("bad_answer", "201 without order_id")
		return a, false
	}
	snap, fresh := r.accepted(o, p.key, p.userID)
	if fresh {
		r.actionsLeft.Add(1)
		go r.followUp(r.follow, snap.OrderID, p)
	}
	return a, true
}
