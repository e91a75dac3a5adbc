-- per-user purchase limit, SQLite equivalent of mysql/0004_per_user_limit.sql. SQLite cannot add a named
-- table constraint to an existing table; the column's own CHECK keeps the limit non-negative.
ALTER TABLE inventory ADD COLUMN per_user_limit INTEGER NOT NULL DEFAULT 0 CHECK (per_user_limit >= 0);

CREATE TABLE user_units (
    sku     TEXT    NOT NULL,
    user_id TEXT    NOT NULL,
    units   INTEGER NOT NULL,
    PRIMARY KEY (sku, user_id),
    CONSTRAINT chk_user_units_units CHECK (units >= 0)
);
