-- 0007, SQLite equivalent of mysql/0007_idempotency_last_use.sql.

CREATE INDEX idx_idempotency_keys_updated_at ON idempotency_keys (updated_at);
