-- per-user purchase limit: the units of a SKU that one user_id holds or has bought never exceed
-- inventory.per_user_limit (0 = no limit). user_units counts them for the SKUs that have a limit: the units
-- of the user's DEDUCT ledger rows of the SKU minus its RESTORE rows, changed by the deduct and the restore
-- under the SKU's inventory row lock, and computed afresh from the ledger when a SKU gets a limit
-- (sqlstore.SetInventoryLocked). A SKU without a limit leaves its rows alone (stale until it gets one again).
ALTER TABLE inventory ADD COLUMN per_user_limit BIGINT NOT NULL DEFAULT 0;
ALTER TABLE inventory ADD CONSTRAINT chk_inventory_per_user_limit CHECK (per_user_limit >= 0);

CREATE TABLE user_units (
    sku     VARCHAR(64) NOT NULL,
    user_id VARCHAR(64) NOT NULL,
    units   BIGINT      NOT NULL,
    PRIMARY KEY (sku, user_id),
    CONSTRAINT chk_user_units_units CHECK (units >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
