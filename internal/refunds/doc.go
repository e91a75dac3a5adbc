// Package refunds hands the refunds ordersaga records to the payment provider: the Provider interface (send
// one refund, answer the provider's reference or a retryable or permanent error), the HTTP adapter that calls
// a provider's refund API (HTTPProvider), and the wire contract that adapter and the provider simulator
// (internal/refundsim, `paysim serve`) share. The sender that drains the outbox through a Provider is
// internal/refundsend, run by workflows.RefundSendWorkflow; see docs/payments.md.
//
// May import: the standard library, internal/config (the URL rule) and internal/webhook (the signature
// format). Must not import a store, Redis, GORM or Temporal (checked by internal/layers).
package refunds
