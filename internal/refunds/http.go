package refunds

import (
	"time"
)

// The wire contract of a provider's refund API (docs/payments.md). HTTPProvider sends it; the simulator
// (internal/refundsim, `paysim serve`) serves it.
//
// POST {base}/v1/refunds with a Refund's JSON, signed like the payment webhook (internal/webhook's format)
// in SignatureHeader, the event ID in IdempotencyKeyHeader. Answers: 201 and an Answer (a new refund); 200,
// ReplayedHeader "true" and the first request's Answer (the key was seen with the same refund); 409
// CodeIdempotencyMismatch; 422 CodeRefused (for good, and for every later request with the key); 400
// CodeBadRequest; 401 CodeInvalidSignature; 503 CodeUnavailable (nothing executed). Errors are a Problem.
const (
	// RefundsPath is where refunds are posted, under the provider's base URL.
	RefundsPath = "/v1/refunds"
	// SignatureHeader carries t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>.
	SignatureHeader = "Refund-Signature"
	// IdempotencyKeyHeader carries the refund's event ID.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on a 200 that answers an earlier request's refund.
	ReplayedHeader = "Idempotent-Replayed"
	// StatusSucceeded is the status of an executed refund.
	StatusSucceeded = "succeeded"
	// MaxAnswerBytes is the most of an answer's body either end reads.
	MaxAnswerBytes = 64 << 10
)

// Problem codes: the provider's (the "code" of a Problem) and the adapter's own (CodeAnswerMismatch).
const (
	CodeRefused             = "refused"
	CodeIdempotencyMismatch = "idempotency-mismatch"
	CodeBadRequest          = "bad-request"
	CodeInvalidSignature    = "invalid-signature"
	CodeUnavailable         = "unavailable"
	// CodeAnswerMismatch: the provider answered a refund of another event, amount or currency than asked
	// (money moved differently: a person must look).
	CodeAnswerMismatch = "answer-mismatch"
)

// Answer is the provider's body for an executed refund (201, or 200 when replayed).
type Answer struct {
	RefundID    string    `json:"refund_id"`
	EventID     string    `json:"event_id"`
	OrderID     string    `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
}

// Problem is the provider's body for every answer that is not a refund.
type Problem struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}
