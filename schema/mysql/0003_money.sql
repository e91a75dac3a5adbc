-- 0003: money. The refund outbox lives on the payments rows themselves: a row is a refund iff refunded_at is
-- set (results refunded and rejected_amount), recorded in the same insert as the payment, so a refund exists
-- exactly once per event; refund_sent_at marks it handed to the payment provider (NULL = still to send).
-- money_anomalies holds what the money reconciliation found, once per (kind, subject).

ALTER TABLE payments ADD COLUMN refund_sent_at DATETIME(6) NULL;

ALTER TABLE payments ADD COLUMN refund_ref VARCHAR(255) NULL;

-- The outbox scan (refund_sent_at IS NULL AND refunded_at IS NOT NULL) and the ledger's days.
CREATE INDEX idx_payments_refund_outbox ON payments (refund_sent_at, refunded_at);

CREATE INDEX idx_payments_created_at ON payments (created_at);

-- PAID orders of a day (the money reconciliation's "no PAID order lacks its payment").
CREATE INDEX idx_orders_paid_at ON orders (paid_at);

CREATE TABLE money_anomalies (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    kind           VARCHAR(32)  NOT NULL,
    subject        VARCHAR(255) NOT NULL,
    day            CHAR(10)     NOT NULL,
    run_id         VARCHAR(128) NOT NULL,
    order_id       VARCHAR(64)  NULL,
    event_id       VARCHAR(255) NULL,
    currency       CHAR(3)      NULL,
    expected_cents BIGINT       NULL,
    observed_cents BIGINT       NULL,
    detail         VARCHAR(512) NULL,
    created_at     DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY uq_money_anomalies_kind_subject (kind, subject),
    KEY idx_money_anomalies_day (day)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
