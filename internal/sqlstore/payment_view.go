package sqlstore

import "github.com/ordersaga/ordersaga"

// View is the payment as GET /v1/orders/{id}/payments shows it: its refund's state from the outbox columns
// (sent wins over a refusal recorded before it).
func (e PaymentEntry) View() ordersaga.PaymentView {
	v := ordersaga.PaymentView{EventID: e.EventID, Result: e.Result, AmountCents: e.AmountCents, Currency: e.Currency,
		RecordedAt: e.CreatedAt}
	if e.RefundedAt == nil {
		return v
	}
	r := &ordersaga.RefundView{Status: ordersaga.RefundPending, RecordedAt: *e.RefundedAt}
	switch {
	case e.RefundSentAt != nil:
		r.Status, r.SentAt, r.ProviderRef = ordersaga.RefundSent, e.RefundSentAt, e.RefundRef
	case e.RefundRefusedAt != nil:
		r.Status, r.RefusedAt, r.Reason = ordersaga.RefundRefused, e.RefundRefusedAt, e.RefundRefusal
	}
	v.Refund = r
	return v
}
