-- 0009: a SKU's stock in shards. stock_shards is the number of Redis counters the SKU's stock is split over,
-- each its own Redis Cluster hash slot (1 = one counter, the layout before 0009). The database is the truth
-- of it; the store sets it with the stock (sqlstore.SetInventoryLocked) and never lowers it: an order keeps
-- the shard count it started with for its life, and its release must find every shard it could have touched.
-- The store bounds it above (64); the CHECK keeps it at least 1.
ALTER TABLE inventory ADD COLUMN stock_shards INT NOT NULL DEFAULT 1;
ALTER TABLE inventory ADD CONSTRAINT chk_inventory_stock_shards CHECK (stock_shards >= 1);
