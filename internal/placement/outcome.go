package placement

import (
	"github.com/ordersaga/ordersaga"
)

// Kind is what became of one order request.
type Kind int

// The kinds of Outcome. Only Reserved and Replayed mean an order exists for the key; after any other the
// same key may be retried (KeyReused: with its first body).
const (
	// Reserved: the order is reserved (Order); Answer is its first answer, kept for replays unless keeping it
	// failed (a retry attaches to the order and keeps it then).
	Reserved Kind = iota + 1
	// Replayed: the key's first answer was kept: Answer, byte for byte, of order OrderID.
	Replayed
	// SoldOut: a line's SKU has too few units (SKU). FastPath: Redis said so before any workflow ran for the
	// key; else the order's workflow rejected it (the key moves on to a new order ID).
	SoldOut
	// LimitExceeded: a line would take its user's units of the SKU past the SKU's per-user limit (Limit:
	// the SKU, the limit and what the user already holds). FastPath as for SoldOut.
	LimitExceeded
	// Gated: every unit left of SKU was still being placed by other requests when the admission gate's wait
	// (Config.GatedWait) ended: they may yet hand units back. No workflow was started; a retry with the key
	// may be placed.
	Gated
	// UnknownSKU: SKU is not in the inventory (before any workflow, or the workflow rejected the order).
	UnknownSKU
	// Rejected: the workflow rejected order OrderID for a reason other than stock (Reason, its
	// closed_reason); the key moves on to a new order ID.
	Rejected
	// KeyReused: the key was first used with another request.
	KeyReused
	// Pending: order OrderID is started but its reservation was not decided within the wait; a retry with
	// the key gets the answer.
	Pending
	// Unavailable: a backing service (Service: "database", "redis" or "temporal") failed before anything was
	// done that a retry with the key would not redo: Err.
	Unavailable
	// Busy: this process already has Config.MaxPlacing placements in flight and Config.MaxQueued waiting
	// (Placing, Queued); nothing was done for the key, and a retry with it is a new request.
	Busy
)

var kindNames = [...]string{
	Reserved: "reserved", Replayed: "replayed", SoldOut: "sold out", Gated: "gated", UnknownSKU: "unknown SKU",
	Rejected: "rejected", KeyReused: "key reused", Pending: "pending", Unavailable: "unavailable",
	LimitExceeded: "limit exceeded", Busy: "busy",
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid kind"
}

// Answer is a first answer of a key as its client got it (the status and body of the HTTP answer), kept in
// idempotency_keys so a retry replays it byte for byte.
type Answer struct {
	Status int
	Body   []byte
}

// Outcome is what Place decided, with what its caller needs to answer (see each Kind for its fields).
type Outcome struct {
	Kind     Kind
	OrderID  string                       // Reserved, Replayed, Rejected, Pending
	Order    ordersaga.Order              // Reserved
	Answer   Answer                       // Reserved, Replayed
	SKU      string                       // SoldOut, Gated, UnknownSKU
	FastPath bool                         // SoldOut, LimitExceeded: refused from Redis, no workflow run for the key
	Limit    ordersaga.LimitExceededError // LimitExceeded
	Reason   string                       // Rejected: the order's closed_reason
	Service  string                       // Unavailable: "database", "redis" or "temporal"
	Err      error                        // Unavailable: the failure
	Placing  int                          // Busy: the placements in flight at most (Config.MaxPlacing)
	Queued   int                          // Busy: the placements waiting at most (Config.MaxQueued)
}

// Services an Unavailable outcome names.
const (
	serviceDatabase = "database"
	serviceRedis    = "redis"
	serviceTemporal = "temporal"
)

func unavailable(service string, err error) Outcome {
	return Outcome{Kind: Unavailable, Service: service, Err: err}
}

func soldOut(sku string, fastPath bool) Outcome {
	return Outcome{Kind: SoldOut, SKU: sku, FastPath: fastPath}
}

func limitExceeded(le ordersaga.LimitExceededError, fastPath bool) Outcome {
	return Outcome{Kind: LimitExceeded, SKU: le.SKU, Limit: le, FastPath: fastPath}
}

// fastRefusal is the fast path's answer when Redis refuses (FastCheck.Refuse, or its recheck after the claim):
// sold out before limit exceeded.
func fastRefusal(c fastCheck) Outcome {
	if c.SoldOutSKU != "" {
		return soldOut(c.SoldOutSKU, true)
	}
	return limitExceeded(*c.Limit, true)
}

// replay is the outcome of a key whose first answer is kept.
func replay(rec keyRecord) Outcome {
	return Outcome{Kind: Replayed, OrderID: rec.OrderID, Answer: Answer{Status: rec.StatusCode, Body: rec.Body}}
}
