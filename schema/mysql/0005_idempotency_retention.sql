-- 0005: idempotency records expire (IDEMPOTENCY_RETENTION). nonce is written when a row is first inserted and
-- again when an expired row is renewed in place: the order IDs of the row's life derive from it (rows from
-- before 0005 keep NULL and the legacy derivation), so a renewed key never reuses an order ID. The cleanup
-- finds the expired rows through the created_at index and deletes them by primary key.

ALTER TABLE idempotency_keys ADD COLUMN nonce VARCHAR(32) NULL;

CREATE INDEX idx_idempotency_keys_created_at ON idempotency_keys (created_at);
