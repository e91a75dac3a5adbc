package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// Headers of POST /v1/orders.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// Reserve outcomes counted by ordersaga_reserve_outcomes_total.
const (
	outcomeReserved        = "reserved"
	outcomeReplayed        = "replayed"
	outcomeSoldOutFastPath = "sold_out_fast_path"
	outcomeSoldOutAdmitted = "sold_out_admission"
	outcomeSoldOut         = "sold_out"
	outcomeUnknownSKU      = "unknown_sku"
	outcomeRejected        = "rejected"
	outcomeKeyReused       = "key_reused"
	outcomePending         = "pending"
	outcomeUnavailable     = "unavailable"
	outcomeError           = "error"
)

// handlePlaceOrder is POST /v1/orders: validate, check the SKUs exist, refuse from the sold-out fast path when
// Redis already says no and the key has no state (one Redis round trip, no database), else claim the
// idempotency key, check again, place the order (Update-with-Start) and answer once the reservation is decided.
func (s *server) handlePlaceOrder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(headerIdempotencyKey)
		if !idempotencyKeyPattern.MatchString(key) {
			writeProblem(w, newProblem(kindInvalidKey, "the Idempotency-Key header is required: 1-255 characters of A-Za-z0-9-_.:"))
			return
		}
		body, prob := readBody(w, r)
		if prob != nil {
			writeProblem(w, prob)
			return
		}
		var req orderRequest
		if err := decodeStrict(body, &req); err != nil {
			writeProblem(w, newProblem(kindInvalidBody, err.Error()))
			return
		}
		if ferr := req.validate(); ferr != nil {
			p := newProblem(kindInvalidField, ferr.Error())
			p.Field = ferr.Field
			writeProblem(w, p)
			return
		}
		p := &placement{s: s, w: w, r: r, key: key, req: req, lines: req.lines()}
		outcome := p.run()
		s.metrics.reserve.WithLabelValues(outcome).Inc()
	})
}

// placement is one POST /v1/orders past validation.
type placement struct {
	s     *server
	w     http.ResponseWriter
	r     *http.Request
	key   string
	req   orderRequest
	lines []ordersaga.Line
}

// run answers the request and returns the reserve outcome.
func (p *placement) run() string {
	ctx := p.r.Context()
	unknown, err := p.s.unknownSKU(ctx, p.lines)
	if err != nil {
		return p.unavailable("database", err)
	}
	if unknown != "" {
		p.unknownSKU(unknown)
		return outcomeUnknownSKU
	}
	// The fast path: in a flash sale almost every request ends here, so it reads Redis only. It may only
	// refuse, and only a key without state in the database (whose first answer was never kept).
	marker := OrderID(p.req.UserID, p.key, 0)
	fast, err := p.s.checkOrder(ctx, marker, p.lines)
	if err != nil {
		return p.unavailable("redis", err)
	}
	if fast.Refuse() {
		p.soldOut(fast.SoldOutSKU)
		return outcomeSoldOutFastPath
	}
	// The admission gate: while the units left are all being placed by other requests, refuse rather than
	// start one more workflow that could only be rejected (a flash sale starts about as many workflows as it
	// has units, not one per buyer). Like the fast path it only refuses, and never a key whose order is
	// started. A key without state is gated before the database is touched; the others after their claim.
	// The admission's units stay counted until place hands them back (or this request ends before).
	var adm *admission.Admission
	defer func() { adm.Done(context.WithoutCancel(ctx)) }()
	if fast.Gate() {
		// The same round trip already saw every unit left being placed: refuse without a second one.
		p.gated(fast.GatedSKU)
		return outcomeSoldOutAdmitted
	}
	if fast.Ready && !fast.Claimed {
		if out, ok := p.gate(ctx, &adm); !ok {
			return out
		}
	}
	store := p.s.Store
	rec, _, err := store.ClaimIdempotencyKey(ctx, p.req.UserID, p.key, p.req.fingerprint(), marker)
	if err != nil {
		return p.unavailable("database", err)
	}
	// Marked after the row is written: a key with a row always has a marker, or the markers are not ready.
	if !fast.Claimed {
		if err := p.s.Gate.MarkClaimed(ctx, marker); err != nil {
			return p.unavailable("redis", err)
		}
	}
	if rec.Fingerprint != p.req.fingerprint() {
		pr := newProblem(kindKeyReused, "this Idempotency-Key was first used with another request body; use a new key for a new order")
		writeProblem(p.w, pr)
		return outcomeKeyReused
	}
	if rec.Answered() {
		p.replay(rec)
		return outcomeReplayed
	}
	// An order that is already final is answered from the database, never placed again: once Temporal has
	// forgotten its workflow (retention), a new run under the same order ID would be a second life of it.
	if o, err := store.Order(ctx, rec.OrderID); err == nil && o.Status.Final() {
		return p.answer(rec, reservationOf(o.View()))
	} else if err != nil && !errors.Is(err, ordersaga.ErrNotFound) {
		return p.unavailable("database", err)
	}

	// The fast path may only refuse. It answers only while no request has started this generation's
	// workflow: one that has is deciding, and every request with the key answers as it does.
	if !rec.Started {
		again, err := p.s.Gate.CheckOrder(ctx, marker, p.lines)
		if err != nil {
			return p.unavailable("redis", err)
		}
		if sku := again.SoldOutSKU; sku != "" {
			cur, out, attach := p.refusedAfterClaim(ctx, func() string {
				p.soldOut(sku)
				return outcomeSoldOutFastPath
			})
			if !attach {
				return out
			}
			rec = cur
		}
	}
	switch {
	case rec.Started && adm != nil:
		// Another request started the order meanwhile: this one attaches to it and needs no units.
		adm.Done(context.WithoutCancel(ctx))
		adm = nil
	case !rec.Started && adm == nil:
		sku, err := p.admit(ctx, &adm)
		if err != nil {
			return p.unavailable("redis", err)
		}
		if sku != "" {
			// Refused by the units of other requests, which may include the one that started this key's
			// order since rec was read.
			cur, out, attach := p.refusedAfterClaim(ctx, func() string {
				p.gated(sku)
				return outcomeSoldOutAdmitted
			})
			if !attach {
				return out
			}
			rec = cur
		}
	}
	if err := store.MarkIdempotencyStarted(ctx, p.req.UserID, p.key, rec.Generation); err != nil {
		return p.unavailable("database", err)
	}
	held := adm
	adm = nil // place hands the units back once the reservation is decided
	res, err := p.place(ctx, rec.OrderID, held)
	if err != nil {
		var unavailable *serviceerror.Unavailable
		switch {
		case errors.As(err, &unavailable):
			return p.unavailable("temporal", err)
		case errors.Is(err, errStillDeciding):
			pr := newProblem(kindOrderPending, "the reservation is not decided yet; retry with the same Idempotency-Key")
			pr.OrderID = rec.OrderID
			writeProblem(p.w, pr)
			return outcomePending
		}
		p.s.Logger.Error("place order", "order_id", rec.OrderID, "error", err)
		writeProblem(p.w, newProblem(kindInternal, "the order could not be placed; retry with the same Idempotency-Key"))
		return outcomeError
	}
	return p.answer(rec, res)
}

// answer answers a decided reservation: 201 with the order (kept for replays), or the rejection.
func (p *placement) answer(rec sqlstore.IdempotencyRecord, res workflows.Reservation) string {
	if res.Order.Status != ordersaga.StatusRejected {
		return p.reserved(rec, res.Order)
	}

	// A rejection is not remembered: the key moves to a new order ID, so a retry is a new order (the rejected
	// one's tombstones are final).
	ctx := p.r.Context()
	next := OrderID(p.req.UserID, p.key, rec.Generation+1)
	if err := p.s.Store.NextIdempotencyGeneration(ctx, p.req.UserID, p.key, rec.Generation, next); err != nil {
		p.s.Logger.Warn("move idempotency key past a rejected order; a retry replays the rejection", "order_id", rec.OrderID, "error", err)
	}
	switch {
	case res.SoldOutSKU != "":
		p.soldOut(res.SoldOutSKU)
		return outcomeSoldOut
	case res.UnknownSKU != "":
		p.unknownSKU(res.UnknownSKU)
		return outcomeUnknownSKU
	}
	pr := newProblem(kindStockUnavailable, "the stock could not be reserved: "+res.Order.ClosedReason)
	pr.OrderID = rec.OrderID
	writeProblem(p.w, pr)
	return outcomeRejected
}

// refusedAfterClaim answers a refusal (the fast path's recheck, or the admission gate) that came after the key
// was claimed. A refusal may only answer a key whose order is not started, and the row read at the claim may
// be stale by now (a concurrent request with the key may have started the order since), so the row is read
// again: an answer kept is replayed; a key still not started gets the refusal, which refuse writes and returns
// the outcome of. When the order is started, attach is true and cur is the row to attach to it with.
func (p *placement) refusedAfterClaim(ctx context.Context, refuse func() string) (cur sqlstore.IdempotencyRecord, out string, attach bool) {
	cur, err := p.s.Store.IdempotencyKey(ctx, p.req.UserID, p.key)
	switch {
	case err != nil:
		return cur, p.unavailable("database", err), false
	case cur.Answered():
		p.replay(cur)
		return cur, outcomeReplayed, false
	case !cur.Started:
		return cur, refuse(), false
	}
	return cur, "", true
}

// gate is the admission gate for a key without state: ok with *adm set when admitted, else the answer is
// written (409 sold-out, or 503 when Redis failed) and its outcome returned.
func (p *placement) gate(ctx context.Context, adm **admission.Admission) (string, bool) {
	sku, err := p.admit(ctx, adm)
	switch {
	case err != nil:
		return p.unavailable("redis", err), false
	case sku != "":
		p.gated(sku)
		return outcomeSoldOutAdmitted, false
	}
	return "", true
}

// admit asks the admission gate (admission.Gate.Admit) for this request's lines, without answering: *adm is set
// when admitted, else the SKU refused is returned (or Redis's error).
func (p *placement) admit(ctx context.Context, adm **admission.Admission) (string, error) {
	a, sku, err := p.s.Gate.Admit(ctx, p.lines, p.s.PlaceTimeout+time.Minute)
	if err == nil && sku == "" {
		*adm = a
	}
	return sku, err
}

// gated answers 409 sold-out for a line whose units left are all being placed by other requests.
func (p *placement) gated(sku string) {
	pr := newProblem(kindSoldOut, "every unit of "+sku+" left is being reserved by other orders; the same Idempotency-Key may be retried later")
	pr.SKU = sku
	writeProblem(p.w, pr)
}

// errStillDeciding means the reservation was not decided within PlaceTimeout, or Temporal asked to back off
// (too many updates in flight on the workflow): a retry with the same key gets the answer.
var errStillDeciding = errors.New("reservation still being decided")

// place starts the order's workflow, or attaches to it, and waits for the reservation. Concurrent requests
// for one order ID in this process share one Update-with-Start (Temporal bounds the updates in flight per
// workflow, so fifty at once would be refused). When the workflow of the order ID is already closed (a request
// that placed it died before keeping its answer, or it was rejected and the key has moved on meanwhile), the
// reservation is read from its result. The admission's units are counted until the reservation is decided
// (or the shared call gives up after PlaceTimeout), even when this request stops waiting before.
func (p *placement) place(ctx context.Context, orderID string, adm *admission.Admission) (workflows.Reservation, error) {
	in := workflows.OrderInput{
		OrderID: orderID, UserID: p.req.UserID, Currency: p.s.Currency, Lines: p.lines,
		PaymentTimeout: p.s.PaymentTimeout,
	}
	// The shared call outlives a request that gives up: the others may still wait for it.
	shared := context.WithoutCancel(ctx)
	ch := p.s.placing.DoChan(orderID, func() (any, error) {
		ctx, cancel := context.WithTimeout(shared, p.s.PlaceTimeout)
		defer cancel()
		p.s.metrics.places.Inc()
		res, err := orderclient.Place(ctx, p.s.Temporal, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case errors.As(err, &started):
			return p.s.closedReservation(ctx, orderID)
		case err != nil && (ctx.Err() != nil || isTimeoutOrBackoff(err)):
			return res, fmt.Errorf("%w: %w", errStillDeciding, err)
		}
		return res, err
	})
	select {
	case r := <-ch:
		adm.Done(shared)
		res, _ := r.Val.(workflows.Reservation)
		return res, r.Err
	case <-ctx.Done():
		go func() {
			<-ch
			adm.Done(shared)
		}()
		return workflows.Reservation{}, fmt.Errorf("%w: %w", errStillDeciding, ctx.Err())
	}
}

// isTimeoutOrBackoff reports an error after which the reservation may still be deciding: the wait for the
// update timed out (the SDK's own deadline can fire just before the context's), or Temporal asked to back off.
func isTimeoutOrBackoff(err error) bool {
	var (
		updateTimeout *client.WorkflowUpdateServiceTimeoutOrCanceledError
		deadline      *serviceerror.DeadlineExceeded
		exhausted     *serviceerror.ResourceExhausted
	)
	return errors.As(err, &updateTimeout) || errors.As(err, &deadline) || errors.As(err, &exhausted) ||
		errors.Is(err, context.DeadlineExceeded)
}

// closedReservation rebuilds the reservation answer of an order whose workflow is closed: from the
// workflow's result, else from the database.
func (s *server) closedReservation(ctx context.Context, orderID string) (workflows.Reservation, error) {
	var o ordersaga.Order
	err := s.Temporal.GetWorkflow(ctx, workflows.OrderWorkflowID(orderID), "").Get(ctx, &o)
	if err != nil {
		rec, derr := s.Store.Order(ctx, orderID)
		if derr != nil {
			return workflows.Reservation{}, fmt.Errorf("closed order %s: %w", orderID, errors.Join(err, derr))
		}
		o = rec.View()
	}
	return reservationOf(o), nil
}

// reservationOf rebuilds the reservation answer of a closed order from its closed_reason (the workflow wrote
// it with ordersaga.RejectReason).
func reservationOf(o ordersaga.Order) workflows.Reservation {
	res := workflows.Reservation{Order: o}
	if o.Status != ordersaga.StatusRejected {
		return res
	}
	if r, ok := ordersaga.ParseRejectReason(o.ClosedReason); ok {
		switch r.Kind {
		case ordersaga.RejectSoldOut:
			res.SoldOutSKU = r.SKU
		case ordersaga.RejectUnknownSKU:
			res.UnknownSKU = r.SKU
		}
	}
	return res
}

// reserved answers 201 with the order and keeps the answer for replays; when a concurrent request with the
// key kept its answer first, that one is the answer.
func (p *placement) reserved(rec sqlstore.IdempotencyRecord, o ordersaga.Order) string {
	body := mustJSON(o)
	kept, stored, err := p.s.Store.KeepIdempotentAnswer(p.r.Context(), p.req.UserID, p.key, rec.Generation, http.StatusCreated, body)
	if err != nil {
		// The order is placed; a retry attaches to it and keeps the answer then.
		p.s.Logger.Warn("keep idempotent answer", "order_id", rec.OrderID, "error", err)
		p.w.Header().Set("Location", orderLocation(o.OrderID))
		writeBody(p.w, http.StatusCreated, "application/json", body)
		return outcomeReserved
	}
	if !stored && kept.Answered() && kept.Generation == rec.Generation {
		p.replay(kept)
		return outcomeReplayed
	}
	p.w.Header().Set("Location", orderLocation(o.OrderID))
	writeBody(p.w, http.StatusCreated, "application/json", body)
	return outcomeReserved
}

// replay answers with the kept first answer, byte for byte.
func (p *placement) replay(rec sqlstore.IdempotencyRecord) {
	p.w.Header().Set(headerReplayed, "true")
	if rec.StatusCode == http.StatusCreated {
		p.w.Header().Set("Location", orderLocation(rec.OrderID))
	}
	contentType := "application/json"
	if rec.StatusCode >= 400 {
		contentType = "application/problem+json"
	}
	writeBody(p.w, rec.StatusCode, contentType, rec.Body)
}

func (p *placement) soldOut(sku string) {
	pr := newProblem(kindSoldOut, "not enough units of "+sku+" for this order; the same Idempotency-Key may be retried later")
	pr.SKU = sku
	writeProblem(p.w, pr)
}

func (p *placement) unknownSKU(sku string) { writeUnknownSKU(p.w, sku) }

// unavailable answers 503 when a backing service failed before anything was done (a retry with the same key
// is always safe: it derives the same order ID).
func (p *placement) unavailable(service string, err error) string {
	p.s.Logger.Warn("order refused: "+service+" unavailable", "user_id", p.req.UserID, "error", err)
	writeProblem(p.w, newProblem(kindUnavailable, service+" is unavailable; retry with the same Idempotency-Key"))
	return outcomeUnavailable
}

func orderLocation(orderID string) string { return "/v1/orders/" + orderID }

// unknownSKU returns the first SKU of lines that is not in the inventory table ("" when all exist).
func (s *server) unknownSKU(ctx context.Context, lines []ordersaga.Line) (string, error) {
	var ask []string
	for _, l := range lines {
		if _, ok := s.known.Load(l.SKU); !ok {
			ask = append(ask, l.SKU)
		}
	}
	if len(ask) == 0 {
		return "", nil
	}
	found, err := s.Store.KnownSKUs(ctx, ask)
	if err != nil {
		return "", err
	}
	for _, sku := range ask {
		if !found[sku] {
			return sku, nil
		}
		s.known.Store(sku, true)
	}
	return "", nil
}
