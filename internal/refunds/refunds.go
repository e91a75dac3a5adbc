package refunds

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Refund is one refund to send: the money of payment event EventID given back, AmountCents in Currency.
// EventID is the provider's idempotency key: the refund of an event is always the same refund.
type Refund struct {
	EventID     string `json:"event_id"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// Receipt is the provider's answer to a refund it executed (now or at an earlier request with the same key).
type Receipt struct {
	// Ref is the provider's name for the refund (never empty).
	Ref string
	// Replayed says the provider answered an earlier request's refund (the same key was sent before).
	Replayed bool
}

// Provider sends refunds. Send answers the provider's receipt, a *RefusedError when the provider refused
// the refund for good (it will refuse it again: not to be retried), or any other error when the outcome is
// unknown or the refusal temporary (the provider unreachable, slow, overloaded, or refusing our signature):
// to be retried with the same Refund, which the idempotency key makes safe.
type Provider interface {
	Send(ctx context.Context, r Refund) (Receipt, error)
}

// RefusedError is a permanent refusal: the provider will not execute this refund whatever the retries.
type RefusedError struct {
	// Code is the provider's (or the adapter's) short name for the reason, e.g. "refused",
	// "idempotency-mismatch", "bad-request", "answer-mismatch".
	Code string
	// Reason is the provider's explanation, for a person.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refund refused by the provider (%s): %s", e.Code, e.Reason)
}

// Refused returns the permanent refusal in err's chain, if there is one.
func Refused(err error) (*RefusedError, bool) {
	var r *RefusedError
	ok := errors.As(err, &r)
	return r, ok
}

// Check reports what is wrong with a refund before it is sent (a refund the outbox must never hold).
func (r Refund) Check() error {
	switch {
	case r.EventID == "":
		return errors.New("refund: event_id is empty")
	case r.AmountCents < 0:
		return fmt.Errorf("refund %s: amount_cents %d is negative", r.EventID, r.AmountCents)
	case len(r.Currency) != 3 || strings.Trim(r.Currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
		return fmt.Errorf("refund %s: currency %q is not a 3-letter upper-case code", r.EventID, r.Currency)
	case r.OrderID == "":
		return fmt.Errorf("refund %s: order_id is empty", r.EventID)
	}
	return nil
}
