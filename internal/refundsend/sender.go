package refundsend

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/killpoint"
	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Outbox is the refund outbox the sender drains: the payments rows whose refund is recorded and not yet
// sent (sqlstore.Store implements it; docs/payments.md).
type Outbox interface {
	PendingRefunds(ctx context.Context, afterID int64, limit int) ([]sqlstore.PaymentEntry, error)
	MarkRefundSent(ctx context.Context, eventID, ref string) (sqlstore.PaymentEntry, error)
	MarkRefundRefused(ctx context.Context, eventID, reason string) (sqlstore.PaymentEntry, error)
}

// Pending is one refund of the outbox, with its row's ID (the page's position).
type Pending struct {
	ID int64
	refunds.Refund
}

// Outcome is what became of one refund the sender handed over.
type Outcome struct {
	EventID string
	// Ref is the provider's reference, recorded on the row (empty when refused).
	Ref string
	// Replayed: the provider answered an earlier request's refund (a send repeated after a crash or a lost
	// answer).
	Replayed bool
	// Refused: the provider refused it for good; the refusal is recorded on the row and the refund leaves the
	// outbox (a money finding, refund_refused, until a person decides).
	Refused bool
	// Code and Reason are the refusal's.
	Code, Reason string
}

// Sender hands refunds to a Provider and records the answer: the one place where a refund becomes sent.
type Sender struct {
	Outbox   Outbox
	Provider refunds.Provider
	// Metrics counts what the sender did (nil: not counted).
	Metrics *Metrics
}

// Page returns up to limit refunds of the outbox after the row afterID, oldest first.
func (s *Sender) Page(ctx context.Context, afterID int64, limit int) ([]Pending, error) {
	rows, err := s.Outbox.PendingRefunds(ctx, afterID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Pending, len(rows))
	for i, e := range rows {
		out[i] = Pending{ID: e.ID, Refund: refunds.Refund{EventID: e.EventID, OrderID: e.OrderID, AmountCents: e.AmountCents,
			Currency: e.Currency}}
	}
	return out, nil
}

// Send hands one refund to the provider, with its event ID as the idempotency key, and records the answer:
// the provider's reference (MarkRefundSent) or its permanent refusal (MarkRefundRefused). Any other error
// leaves the refund in the outbox and is to be retried: at least once toward the provider, exactly once at
// the provider. A process that dies between the provider's answer and the mark (killpoint.RefundAfterSend)
// sends it again, and the provider answers the first refund.
func (s *Sender) Send(ctx context.Context, p Pending) (Outcome, error) {
	start := time.Now()
	rec, err := s.Provider.Send(ctx, p.Refund)
	s.Metrics.observe(time.Since(start))
	if refused, ok := refunds.Refused(err); ok {
		if _, merr := s.Outbox.MarkRefundRefused(ctx, p.EventID, refused.Code+": "+refused.Reason); merr != nil {
			return Outcome{}, fmt.Errorf("record the provider's refusal of refund %s: %w", p.EventID, merr)
		}
		s.Metrics.refused(refused.Code)
		return Outcome{EventID: p.EventID, Refused: true, Code: refused.Code, Reason: refused.Reason}, nil
	}
	if err != nil {
		s.Metrics.failed()
		return Outcome{}, err
	}
	if rec.Ref == "" {
		s.Metrics.failed()
		return Outcome{}, fmt.Errorf("refund %s: the provider answered without a reference", p.EventID)
	}
	killpoint.Hit(killpoint.RefundAfterSend, p.EventID) // the provider has the refund; the row does not know
	if _, err := s.Outbox.MarkRefundSent(ctx, p.EventID, rec.Ref); err != nil {
		return Outcome{}, fmt.Errorf("mark refund %s sent (provider reference %s): %w", p.EventID, rec.Ref, err)
	}
	s.Metrics.sent(rec.Replayed)
	return Outcome{EventID: p.EventID, Ref: rec.Ref, Replayed: rec.Replayed}, nil
}
