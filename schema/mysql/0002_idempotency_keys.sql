-- idempotency_keys: one row per (user_id, Idempotency-Key) of POST /v1/orders. The order ID is derived from
-- the pair and the generation, which moves on only when that order was rejected (sold out is not remembered:
-- the same key may succeed later as a new order). The first reserved answer is kept byte for byte.

CREATE TABLE idempotency_keys (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    user_id       VARCHAR(64)  NOT NULL,
    idem_key      VARCHAR(255) NOT NULL,
    fingerprint   CHAR(64)     NOT NULL,
    generation    INT          NOT NULL DEFAULT 0,
    order_id      VARCHAR(64)  NOT NULL,
    started       TINYINT      NOT NULL DEFAULT 0,
    status_code   INT          NULL,
    response_body BLOB         NULL,
    created_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY uq_idempotency_keys_user_key (user_id, idem_key),
    CONSTRAINT chk_idempotency_keys_generation CHECK (generation >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
