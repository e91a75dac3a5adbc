-- 0005, SQLite equivalent of mysql/0005_idempotency_retention.sql.

ALTER TABLE idempotency_keys ADD COLUMN nonce TEXT NULL;

CREATE INDEX idx_idempotency_keys_created_at ON idempotency_keys (created_at);
