-- 0003: money, SQLite equivalent of mysql/0003_money.sql (same columns and keys).

ALTER TABLE payments ADD COLUMN refund_sent_at DATETIME NULL;

ALTER TABLE payments ADD COLUMN refund_ref TEXT NULL;

CREATE INDEX idx_payments_refund_outbox ON payments (refund_sent_at, refunded_at);

CREATE INDEX idx_payments_created_at ON payments (created_at);

CREATE INDEX idx_orders_paid_at ON orders (paid_at);

CREATE TABLE money_anomalies (
    id             INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    kind           TEXT     NOT NULL,
    subject        TEXT     NOT NULL,
    day            TEXT     NOT NULL,
    run_id         TEXT     NOT NULL,
    order_id       TEXT     NULL,
    event_id       TEXT     NULL,
    currency       TEXT     NULL,
    expected_cents INTEGER  NULL,
    observed_cents INTEGER  NULL,
    detail         TEXT     NULL,
    created_at     DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX uq_money_anomalies_kind_subject ON money_anomalies (kind, subject);
CREATE INDEX idx_money_anomalies_day ON money_anomalies (day);
