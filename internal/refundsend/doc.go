// Package refundsend drains the refund outbox through a refunds.Provider: the one place a recorded refund
// becomes sent (with the provider's reference) or refused (recorded). workflows.RefundSendWorkflow runs it on
// Temporal, through activities.RefundSender; see docs/payments.md.
//
// May import: internal/refunds, internal/sqlstore (the outbox's rows), internal/killpoint, Prometheus and the
// standard library. Must not import go-redis, GORM, database/sql or Temporal (checked by internal/layers).
package refundsend
