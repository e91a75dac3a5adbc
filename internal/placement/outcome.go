package placement

import (
	"time"

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
	// InLine: the request holds a ticket in SKU's line (Position live tickets ahead of it; Wait the estimated
	// wait for its turn) and is due back within RetryAfter to keep it. Nothing was done for the key (no row,
	// no unit held): a retry with it is placed in its turn.
	InLine
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
)

var kindNames = [...]string{
	Reserved: "reserved", Replayed: "replayed", SoldOut: "sold out", InLine: "in line", UnknownSKU: "unknown SKU",
	Rejected: "rejected", KeyReused: "key reused", Pending: "pending", Unavailable: "unavailable",
	LimitExceeded: "limit exceeded",
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
	SKU      string                       // SoldOut, InLine, UnknownSKU
	FastPath bool                         // SoldOut, LimitExceeded: refused from Redis, no workflow run for the key
	Limit    ordersaga.LimitExceededError // LimitExceeded
	Reason   string                       // Rejected: the order's closed_reason
	Service  string                       // Unavailable: "database", "redis" or "temporal"
	Err      error                        // Unavailable: the failure
	Position int64                        // InLine: the live tickets ahead in SKU's line
	Wait     time.Duration                // InLine: the estimated wait for the turn
	// RetryAfter is, for InLine, when the holder is due back to keep its ticket (whole seconds, at least 1).
	RetryAfter time.Duration
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

func inLine(t Turn) Outcome {
	return Outcome{Kind: InLine, SKU: t.SKU, Position: t.Position, Wait: t.Wait, RetryAfter: max(t.RetryAfter, time.Second)}
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
