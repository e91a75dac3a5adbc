-- ordersaga schema, SQLite equivalent of mysql/0001_init.sql (same tables, columns and unique keys).

CREATE TABLE inventory (
    sku         TEXT    NOT NULL PRIMARY KEY,
    stock       INTEGER NOT NULL,
    price_cents INTEGER NOT NULL DEFAULT 0,
    updated_at  DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT chk_inventory_stock CHECK (stock >= 0),
    CONSTRAINT chk_inventory_price CHECK (price_cents >= 0)
);

CREATE TABLE stock_ledger (
    id         INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    order_id   TEXT     NOT NULL,
    sku        TEXT     NOT NULL,
    op         TEXT     NOT NULL,
    qty        INTEGER  NOT NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT chk_stock_ledger_op CHECK (op IN ('DEDUCT', 'RESTORE')),
    CONSTRAINT chk_stock_ledger_qty CHECK (qty >= 0)
);
CREATE UNIQUE INDEX uq_stock_ledger_order_sku_op ON stock_ledger (order_id, sku, op);
CREATE INDEX idx_stock_ledger_sku ON stock_ledger (sku);

CREATE TABLE orders (
    id            INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    order_id      TEXT     NOT NULL,
    user_id       TEXT     NOT NULL,
    status        TEXT     NOT NULL,
    amount_cents  INTEGER  NOT NULL DEFAULT 0,
    currency      TEXT     NOT NULL,
    pay_by        DATETIME NULL,
    paid_at       DATETIME NULL,
    payment_event_id TEXT  NULL,
    closed_reason TEXT     NULL,
    created_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at    DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX uq_orders_order_id ON orders (order_id);
CREATE INDEX idx_orders_status ON orders (status);

CREATE TABLE order_lines (
    id               INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    order_id         TEXT    NOT NULL,
    sku              TEXT    NOT NULL,
    qty              INTEGER NOT NULL,
    unit_price_cents INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT chk_order_lines_qty CHECK (qty > 0)
);
CREATE UNIQUE INDEX uq_order_lines_order_sku ON order_lines (order_id, sku);
CREATE INDEX idx_order_lines_sku ON order_lines (sku);

CREATE TABLE payments (
    id           INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT     NOT NULL,
    order_id     TEXT     NOT NULL,
    amount_cents INTEGER  NOT NULL,
    currency     TEXT     NOT NULL,
    result       TEXT     NOT NULL,
    detail       TEXT     NULL,
    refunded_at  DATETIME NULL,
    created_at   DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE UNIQUE INDEX uq_payments_event_id ON payments (event_id);
CREATE INDEX idx_payments_order_id ON payments (order_id);

CREATE TABLE stock_anomalies (
    id         INTEGER  NOT NULL PRIMARY KEY AUTOINCREMENT,
    run_id     TEXT     NOT NULL,
    sku        TEXT     NOT NULL,
    order_id   TEXT     NULL,
    kind       TEXT     NOT NULL,
    expected   INTEGER  NULL,
    observed   INTEGER  NULL,
    action     TEXT     NOT NULL,
    detail     TEXT     NULL,
    created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX idx_stock_anomalies_sku ON stock_anomalies (sku);
CREATE INDEX idx_stock_anomalies_run ON stock_anomalies (run_id);
