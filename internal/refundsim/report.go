package refundsim

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
)

// Report is what the simulator executed and refused, and how it answered.
type Report struct {
	// Refunds are the executed refunds, by created_at then event_id.
	Refunds []Entry `json:"refunds"`
	// Refused are the keys refused for good, by event_id.
	Refused []Refusal `json:"refused"`
	Totals  Totals    `json:"totals"`
}

// Entry is one executed refund.
type Entry struct {
	RefundID    string    `json:"refund_id"`
	EventID     string    `json:"event_id"`
	OrderID     string    `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	CreatedAt   time.Time `json:"created_at"`
	// Requests is every request that carried this key past the signature and body checks, the first included.
	Requests int `json:"requests"`
}

// Refusal is one key refused for good.
type Refusal struct {
	EventID  string `json:"event_id"`
	Code     string `json:"code"`
	Reason   string `json:"reason"`
	Requests int    `json:"requests"`
}

// Totals count the refund requests (every POST) by answer.
type Totals struct {
	Requests     int64 `json:"requests"`
	Executed     int64 `json:"executed"`      // 201
	Replays      int64 `json:"replays"`       // 200, replayed
	Refused      int64 `json:"refused"`       // 422, every time a refused key is sent
	Mismatches   int64 `json:"mismatches"`    // 409
	Failed       int64 `json:"failed"`        // 503 of FailShare
	TimedOut     int64 `json:"timed_out"`     // executed or replayed, answer lost (TimeoutShare)
	Blackholed   int64 `json:"blackholed"`    // held by a blackhole
	BadSignature int64 `json:"bad_signature"` // 401
	BadRequest   int64 `json:"bad_request"`   // 400
}

// Report answers a copy of what the simulator holds now.
func (s *Server) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := Report{Refunds: make([]Entry, 0, len(s.refunds)), Refused: make([]Refusal, 0, len(s.refused)), Totals: s.totals}
	for key, e := range s.refunds {
		c := *e
		c.Requests = s.requests[key]
		rep.Refunds = append(rep.Refunds, c)
	}
	for key, rf := range s.refused {
		c := *rf
		c.Requests = s.requests[key]
		rep.Refused = append(rep.Refused, c)
	}
	slices.SortFunc(rep.Refunds, func(a, b Entry) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.EventID, b.EventID))
	})
	slices.SortFunc(rep.Refused, func(a, b Refusal) int { return strings.Compare(a.EventID, b.EventID) })
	return rep
}

func (e *Entry) answer() refunds.Answer {
	return refunds.Answer{RefundID: e.RefundID, EventID: e.EventID, OrderID: e.OrderID, AmountCents: e.AmountCents,
		Currency: e.Currency, Status: refunds.StatusSucceeded, CreatedAt: e.CreatedAt}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
