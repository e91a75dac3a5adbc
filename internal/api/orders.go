package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/placement"
)

// Headers of POST /v1/orders.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	// An answer in-line says where the request stands: the tickets ahead of it, and the estimated seconds to
	// its turn (as in the problem's position and estimated_wait_seconds).
	headerQueuePosition = "Queue-Position"
	headerQueueWait     = "Queue-Estimated-Wait"
)

// Reserve outcomes counted by ordersaga_reserve_outcomes_total.
const (
	outcomeReserved        = "reserved"
	outcomeReplayed        = "replayed"
	outcomeSoldOutFastPath = "sold_out_fast_path"
	outcomeInLine          = "in_line"
	outcomeSoldOut         = "sold_out"
	outcomeLimitFastPath   = "limit_exceeded_fast_path"
	outcomeLimitExceeded   = "limit_exceeded"
	outcomeUnknownSKU      = "unknown_sku"
	outcomeRejected        = "rejected"
	outcomeKeyReused       = "key_reused"
	outcomePending         = "pending"
	outcomeUnavailable     = "unavailable"
	outcomeError           = "error"
)

// handlePlaceOrder is POST /v1/orders: decode and validate the request, place it (placement.Service.Place,
// which owns the fast path, the admission gate and the idempotency key) and answer its outcome.
func (s *server) handlePlaceOrder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(headerIdempotencyKey)
		if !placement.ValidKey(key) {
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
		caller, ok := s.caller(w, r)
		if !ok {
			return
		}
		if caller != "" && caller != req.UserID {
			p := newProblem(kindForbidden, "user_id: a caller places orders for itself only")
			p.Field = "user_id"
			writeProblem(w, p)
			return
		}
		out, err := s.placement.Place(r.Context(), placement.Request{UserID: req.UserID, Key: key, Lines: req.lines()})
		if err != nil {
			s.Logger.Error("place order", "user_id", req.UserID, "order_id", out.OrderID, "error", err)
			writeProblem(w, newProblem(kindInternal, "the order could not be placed; retry with the same Idempotency-Key"))
			s.metrics.reserve.WithLabelValues(outcomeError).Inc()
			return
		}
		if out.Kind == placement.Unavailable {
			s.Logger.Warn("order refused: "+out.Service+" unavailable", "user_id", req.UserID, "error", out.Err)
		}
		s.metrics.reserve.WithLabelValues(writePlaced(w, out)).Inc()
	})
}

// keepAs is the first answer of a reserved order, which the placement service keeps for replays: 201 with
// the order.
func keepAs(o ordersaga.Order) placement.Answer {
	return placement.Answer{Status: http.StatusCreated, Body: mustJSON(o)}
}

// writePlaced answers a placement's outcome (docs/http-api.md, POST /v1/orders) and returns its label of
// ordersaga_reserve_outcomes_total.
func writePlaced(w http.ResponseWriter, out placement.Outcome) string {
	switch out.Kind {
	case placement.Reserved:
		w.Header().Set("Location", orderLocation(out.OrderID))
		writeBody(w, out.Answer.Status, "application/json", out.Answer.Body)
		return outcomeReserved
	case placement.Replayed:
		writeReplay(w, out)
		return outcomeReplayed
	case placement.SoldOut:
		pr := newProblem(kindSoldOut, "not enough units of "+out.SKU+" for this order; the same Idempotency-Key may be retried later")
		pr.SKU = out.SKU
		writeProblem(w, pr)
		if out.FastPath {
			return outcomeSoldOutFastPath
		}
		return outcomeSoldOut
	case placement.LimitExceeded:
		le := out.Limit
		pr := newProblem(kindLimitExceeded, fmt.Sprintf("%s allows %d units per user and this user already holds %d; the same Idempotency-Key may be retried once other orders of the user are cancelled or expire",
			le.SKU, le.Limit, le.Held))
		pr.SKU, pr.PerUserLimit, pr.Held = le.SKU, &le.Limit, &le.Held
		writeProblem(w, pr)
		if out.FastPath {
			return outcomeLimitFastPath
		}
		return outcomeLimitExceeded
	case placement.InLine:
		// Nothing was done for the key but its ticket: the same key, back within Retry-After, keeps its place.
		wait := math.Ceil(out.Wait.Seconds()*10) / 10
		pr := newProblem(kindInLine, fmt.Sprintf("%d orders are ahead of this one in the line for %s (about %.1f s); retry with the same Idempotency-Key within Retry-After to keep the place",
			out.Position, out.SKU, wait))
		pr.SKU, pr.Position, pr.EstimatedWait, pr.retryAfter = out.SKU, &out.Position, &wait, int(out.RetryAfter/time.Second)
		w.Header().Set(headerQueuePosition, strconv.FormatInt(out.Position, 10))
		w.Header().Set(headerQueueWait, strconv.FormatFloat(wait, 'f', 1, 64))
		writeProblem(w, pr)
		return outcomeInLine
	case placement.UnknownSKU:
		writeUnknownSKU(w, out.SKU)
		return outcomeUnknownSKU
	case placement.Rejected:
		pr := newProblem(kindStockUnavailable, "the stock could not be reserved: "+out.Reason)
		pr.OrderID = out.OrderID
		writeProblem(w, pr)
		return outcomeRejected
	case placement.KeyReused:
		writeProblem(w, newProblem(kindKeyReused, "this Idempotency-Key was first used with another request body; use a new key for a new order"))
		return outcomeKeyReused
	case placement.Pending:
		pr := newProblem(kindOrderPending, "the reservation is not decided yet; retry with the same Idempotency-Key")
		pr.OrderID = out.OrderID
		writeProblem(w, pr)
		return outcomePending
	case placement.Unavailable:
		// Nothing was done that a retry would not redo: a retry with the same key derives the same order ID.
		writeProblem(w, newProblem(kindUnavailable, out.Service+" is unavailable; retry with the same Idempotency-Key"))
		return outcomeUnavailable
	}
	writeProblem(w, newProblem(kindInternal, "the order could not be placed; retry with the same Idempotency-Key"))
	return outcomeError
}

// writeReplay answers with the kept first answer, byte for byte.
func writeReplay(w http.ResponseWriter, out placement.Outcome) {
	w.Header().Set(headerReplayed, "true")
	if out.Answer.Status == http.StatusCreated {
		w.Header().Set("Location", orderLocation(out.OrderID))
	}
	contentType := "application/json"
	if out.Answer.Status >= 400 {
		contentType = "application/problem+json"
	}
	writeBody(w, out.Answer.Status, contentType, out.Answer.Body)
}

func orderLocation(orderID string) string { return "/v1/orders/" + orderID }
