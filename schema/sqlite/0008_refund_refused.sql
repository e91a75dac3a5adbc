-- 0008, SQLite equivalent of mysql/0008_refund_refused.sql.

ALTER TABLE payments ADD COLUMN refund_refused_at DATETIME NULL;

ALTER TABLE payments ADD COLUMN refund_refused_reason TEXT NULL;
