-- idempotency_keys, SQLite equivalent of mysql/0002_idempotency_keys.sql.

CREATE TABLE idempotency_keys (
    id            INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    user_id       TEXT     NOT NULL,
    idem_key      TEXT     NOT NULL,
    fingerprint   TEXT     NOT NULL,
    generation    INTEGER  NOT NULL DEFAULT 0,
    order_id      TEXT     NOT NULL,
    started       INTEGER  NOT NULL DEFAULT 0,
    status_code   INTEGER  NULL,
    response_body BLOB     NULL,
    created_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT chk_idempotency_keys_generation CHECK (generation >= 0)
);
CREATE UNIQUE INDEX uq_idempotency_keys_user_key ON idempotency_keys (user_id, idem_key);
