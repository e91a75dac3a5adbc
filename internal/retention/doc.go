// Package retention is the cleanup of the order API's idempotency records (IDEMPOTENCY_RETENTION): the rows
// of idempotency_keys unused for the retention whose order is not open, and their Redis markers, deleted in
// small batches by primary key (Cleaner.Batch), each row only while it is still the expired life that was
// read and each marker only while it still carries that life's nonce. A Temporal Schedule runs it
// (workflows.IdempotencyCleanupWorkflow, through activities); its progress is Prometheus metrics (Metrics).
//
// May import: the root package, internal/sqlstore, internal/redisstock, Prometheus and the standard library.
// Must not import go-redis, GORM, database/sql or Temporal (checked by internal/layers).
package retention
