-- 0007: a key is remembered for IDEMPOTENCY_RETENTION after its last use, not its first: every write of a row
-- of idempotency_keys (a claim that finds it unused for a while, the start of its order, its first answer, a
-- rejection) writes updated_at, and the order API treats a row as expired, and the cleanup finds it, by
-- updated_at, through this index. created_at stays the start of the row's life (its index is no longer read;
-- kept so that a process of the previous release finds its rows without a scan during a rolling upgrade).

CREATE INDEX idx_idempotency_keys_updated_at ON idempotency_keys (updated_at);
