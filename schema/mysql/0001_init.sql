-- ordersaga schema, MySQL 8 / MariaDB 10.11. The source of truth; sqlite/0001_init.sql mirrors it.

CREATE TABLE inventory (
    sku         VARCHAR(64)  NOT NULL,
    stock       BIGINT       NOT NULL,
    price_cents BIGINT       NOT NULL DEFAULT 0,
    updated_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (sku),
    CONSTRAINT chk_inventory_stock CHECK (stock >= 0),
    CONSTRAINT chk_inventory_price CHECK (price_cents >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE stock_ledger (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    order_id   VARCHAR(64)  NOT NULL,
    sku        VARCHAR(64)  NOT NULL,
    op         VARCHAR(8)   NOT NULL,
    qty        BIGINT       NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY uq_stock_ledger_order_sku_op (order_id, sku, op),
    KEY idx_stock_ledger_sku (sku),
    CONSTRAINT chk_stock_ledger_op CHECK (op IN ('DEDUCT', 'RESTORE')),
    CONSTRAINT chk_stock_ledger_qty CHECK (qty >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE orders (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    order_id      VARCHAR(64)  NOT NULL,
    user_id       VARCHAR(64)  NOT NULL,
    status        VARCHAR(20)  NOT NULL,
    amount_cents  BIGINT       NOT NULL DEFAULT 0,
    currency      CHAR(3)      NOT NULL,
    pay_by        DATETIME(6)  NULL,
    paid_at       DATETIME(6)  NULL,
    payment_event_id VARCHAR(255) NULL,
    closed_reason VARCHAR(255) NULL,
    created_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY uq_orders_order_id (order_id),
    KEY idx_orders_status (status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE order_lines (
    id               BIGINT      NOT NULL AUTO_INCREMENT,
    order_id         VARCHAR(64) NOT NULL,
    sku              VARCHAR(64) NOT NULL,
    qty              BIGINT      NOT NULL,
    unit_price_cents BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (id),
    UNIQUE KEY uq_order_lines_order_sku (order_id, sku),
    KEY idx_order_lines_sku (sku),
    CONSTRAINT chk_order_lines_qty CHECK (qty > 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE payments (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    event_id     VARCHAR(255) NOT NULL,
    order_id     VARCHAR(64)  NOT NULL,
    amount_cents BIGINT       NOT NULL,
    currency     CHAR(3)      NOT NULL,
    result       VARCHAR(20)  NOT NULL,
    detail       VARCHAR(255) NULL,
    refunded_at  DATETIME(6)  NULL,
    created_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY uq_payments_event_id (event_id),
    KEY idx_payments_order_id (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE stock_anomalies (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    run_id     VARCHAR(128) NOT NULL,
    sku        VARCHAR(64)  NOT NULL,
    order_id   VARCHAR(64)  NULL,
    kind       VARCHAR(32)  NOT NULL,
    expected   BIGINT       NULL,
    observed   BIGINT       NULL,
    action     VARCHAR(32)  NOT NULL,
    detail     VARCHAR(512) NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    KEY idx_stock_anomalies_sku (sku),
    KEY idx_stock_anomalies_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
