-- 0009, SQLite equivalent of mysql/0009_stock_shards.sql. SQLite cannot add a named table constraint to an
-- existing table; the column's own CHECK keeps the shard count at least 1.
ALTER TABLE inventory ADD COLUMN stock_shards INTEGER NOT NULL DEFAULT 1 CHECK (stock_shards >= 1);
