package refundsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// Outcomes of a refund request, as the log names them.
const (
	outExecuted     = "executed"
	outReplayed     = "replayed"
	outMismatch     = "idempotency-mismatch"
	outRefused      = "refused"
	outFailed       = "failed"
	outTimedOut     = "timed-out"
	outBlackholed   = "blackholed"
	outBadSignature = "bad-signature"
	outBadRequest   = "bad-request"
)

// verdict is what the simulator decided for one refund request.
type verdict struct {
	outcome string
	status  int
	answer  refunds.Answer  // 200, 201
	problem refunds.Problem // the others
	// lose: the refund was executed and its answer is lost (TimeoutShare).
	lose bool
}

// postRefund serves POST /v1/refunds: signature, body, then the faults in order (blackhole, fail, refuse,
// timeout) around the idempotent execution.
func (s *Server) postRefund(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(refunds.IdempotencyKeyHeader)
	var v verdict
	defer func() { s.log.Info("refund request", "event_id", key, "status", v.status, "outcome", v.outcome) }()
	s.count(func(t *Totals) { t.Requests++ })

	in, v, ok := s.admit(w, r, key)
	if !ok {
		writeVerdict(w, v)
		return
	}
	if left := s.startHold(key); left > 0 {
		v = verdict{outcome: outBlackholed, status: http.StatusServiceUnavailable,
			problem: refunds.Problem{Code: refunds.CodeUnavailable, Reason: "the provider did not answer in time (simulated blackhole): nothing executed"}}
		if !s.hold(r.Context(), left) {
			v.status = 0
			abort()
		}
		writeVerdict(w, v)
		return
	}
	v = s.decide(in)
	if v.lose {
		s.hold(r.Context(), timeoutHold)
		v.status = 0
		abort()
	}
	writeVerdict(w, v)
}

// admit checks the signature and the body; !ok: v is the 401 or 400 to answer.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, key string) (refunds.Refund, verdict, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, refunds.MaxAnswerBytes))
	if err != nil {
		s.count(func(t *Totals) { t.BadRequest++ })
		return refunds.Refund{}, badRequest(fmt.Sprintf("body: %v", err)), false
	}
	err = webhook.Verify(r.Header.Get(refunds.SignatureHeader), body, s.secrets, s.now(), webhook.Tolerance)
	if err != nil {
		s.count(func(t *Totals) { t.BadSignature++ })
		return refunds.Refund{}, verdict{outcome: outBadSignature, status: http.StatusUnauthorized,
			problem: refunds.Problem{Code: refunds.CodeInvalidSignature, Reason: signatureReason(err)}}, false
	}
	in, err := decodeRefund(body, key)
	if err != nil {
		s.count(func(t *Totals) { t.BadRequest++ })
		return refunds.Refund{}, badRequest(err.Error()), false
	}
	return in, verdict{}, true
}

// signatureReason explains a refused signature without echoing the header (a malformed one's text quotes it).
func signatureReason(err error) string {
	if errors.Is(err, webhook.ErrMalformed) {
		return refunds.SignatureHeader + ": " + webhook.ErrMalformed.Error() + ": want t=<unix seconds>,v1=<hex HMAC-SHA256>"
	}
	return refunds.SignatureHeader + ": " + err.Error()
}

// wireRefund is a request body with every field's presence visible.
type wireRefund struct {
	EventID     *string `json:"event_id"`
	OrderID     *string `json:"order_id"`
	AmountCents *int64  `json:"amount_cents"`
	Currency    *string `json:"currency"`
}

// decodeRefund reads a request body by the contract, naming the field that is missing or invalid.
func decodeRefund(body []byte, key string) (refunds.Refund, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var w wireRefund
	if err := dec.Decode(&w); err != nil {
		return refunds.Refund{}, fmt.Errorf("body is not the refund's JSON: %v", err)
	}
	if dec.More() {
		return refunds.Refund{}, errors.New("body is not the refund's JSON: more after the object")
	}
	for _, f := range []struct {
		name    string
		missing bool
	}{{"event_id", w.EventID == nil}, {"order_id", w.OrderID == nil}, {"amount_cents", w.AmountCents == nil}, {"currency", w.Currency == nil}} {
		if f.missing {
			return refunds.Refund{}, fmt.Errorf("%s is missing", f.name)
		}
	}
	in := refunds.Refund{EventID: *w.EventID, OrderID: *w.OrderID, AmountCents: *w.AmountCents, Currency: *w.Currency}
	if err := in.Check(); err != nil {
		return refunds.Refund{}, err
	}
	if key != in.EventID {
		return refunds.Refund{}, fmt.Errorf("%s %q is not the event_id %q", refunds.IdempotencyKeyHeader, key, in.EventID)
	}
	return in, nil
}

// startHold counts a request that a blackhole holds and answers how long it lasts (0: no blackhole).
func (s *Server) startHold(key string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.blackholeLeft()
	if left > 0 {
		s.requests[key]++
		s.totals.Blackholed++
	}
	return left
}

// hold waits d, or until the client goes away (false) or the simulator is closed.
func (s *Server) hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closed:
		return true
	case <-ctx.Done():
		return false
	}
}

// decide applies the fail, refuse and timeout faults around the idempotent execution, under the lock: one
// key is executed once.
func (s *Server) decide(in refunds.Refund) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := in.EventID
	s.requests[key]++
	if s.draw(s.faults.FailShare) {
		s.totals.Failed++
		return verdict{outcome: outFailed, status: http.StatusServiceUnavailable,
			problem: refunds.Problem{Code: refunds.CodeUnavailable, Reason: "simulated failure: nothing executed"}}
	}
	if rf, ok := s.refused[key]; ok {
		s.totals.Refused++
		return refusal(*rf)
	}
	if e, ok := s.refunds[key]; ok {
		if e.OrderID != in.OrderID || e.AmountCents != in.AmountCents || e.Currency != in.Currency {
			s.totals.Mismatches++
			return verdict{outcome: outMismatch, status: http.StatusConflict, problem: refunds.Problem{Code: refunds.CodeIdempotencyMismatch,
				Reason: fmt.Sprintf("%s %s was used for order %s, %d %s; this request is for order %s, %d %s",
					refunds.IdempotencyKeyHeader, key, e.OrderID, e.AmountCents, e.Currency, in.OrderID, in.AmountCents, in.Currency)}}
		}
		s.totals.Replays++
		return s.maybeLose(verdict{outcome: outReplayed, status: http.StatusOK, answer: e.answer()})
	}
	if refusedKey(key, s.faults.RefuseShare) {
		rf := &Refusal{EventID: key, Code: refunds.CodeRefused,
			Reason: fmt.Sprintf("the provider refuses the refund of event %s (simulated: refuse_share %v)", key, s.faults.RefuseShare)}
		s.refused[key] = rf
		s.totals.Refused++
		return refusal(*rf)
	}
	e := &Entry{RefundID: "re_" + randomHex(12), EventID: key, OrderID: in.OrderID, AmountCents: in.AmountCents,
		Currency: in.Currency, CreatedAt: s.now().UTC()}
	s.refunds[key] = e
	s.totals.Executed++
	return s.maybeLose(verdict{outcome: outExecuted, status: http.StatusCreated, answer: e.answer()})
}

// maybeLose draws TimeoutShare for an answered refund. The caller holds s.mu.
func (s *Server) maybeLose(v verdict) verdict {
	if s.draw(s.faults.TimeoutShare) {
		s.totals.TimedOut++
		v.lose, v.outcome = true, outTimedOut
	}
	return v
}

func refusal(rf Refusal) verdict {
	return verdict{outcome: outRefused, status: http.StatusUnprocessableEntity,
		problem: refunds.Problem{Code: rf.Code, Reason: rf.Reason}}
}

func badRequest(reason string) verdict {
	return verdict{outcome: outBadRequest, status: http.StatusBadRequest,
		problem: refunds.Problem{Code: refunds.CodeBadRequest, Reason: reason}}
}

func writeVerdict(w http.ResponseWriter, v verdict) {
	switch v.status {
	case http.StatusCreated:
		writeJSON(w, v.status, v.answer)
	case http.StatusOK:
		w.Header().Set(refunds.ReplayedHeader, "true")
		writeJSON(w, v.status, v.answer)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, v.status, v.problem)
	default:
		writeJSON(w, v.status, v.problem)
	}
}

// abort ends the request without an answer: the connection is dropped (net/http's documented way).
func abort() { panic(http.ErrAbortHandler) }

func (s *Server) count(f func(*Totals)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.totals)
}
