-- release: give back the units one order holds (or held and the DB has since restored), once.
-- KEYS[1] inv:{SKU}:avail   KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:o:{ORDER}
-- KEYS[4] inv:{SKU}:ver (bumped on every change, for reconciliation's compare-and-set)
-- KEYS[6] inv:{SKU}:u:{USER} (the user's units per order, reserve.lua; KEYS[5] unused, passed so every
-- script has the same keys)
-- ARGV[1] order ID   ARGV[2] marker TTL in seconds
-- ARGV[3] 'sold' when the database kept the order's units sold (the order is PAID, so its deduct of every
--         line stands): a confirmed hold ('C') stays confirmed, and a hold ('H') is confirmed (the order's
--         confirm was lost: the database took the units). Never given back: Redis must not promise units the
--         database sold. (A later life of the order ID that held again after the first life's marker expired
--         is confirmed too: Redis then promises q units less than it could until reconciliation, the safe way.)
-- A shard of a SKU split over several (shards.go) may hold the walk's markers: 'P' (the order's reserve passed
-- here) becomes 'X' (passed, then released) and 'X' is passed again: the release goes on along the walk's
-- path (8), since the order may hold on a shard beyond; a 'T' stops it (nothing was ever beyond).
-- Returns 1 released, 2 duplicate (already released), 3 tombstone written (never reserved), 7 kept (sold),
-- 8 passed (go on to the next shard).
-- Callers restore the DB before they release, so a confirmed hold ('C') is given back too, unless sold. Every
-- release that gives units back (or writes a tombstone) takes the order off the user's count, once: a sold
-- order's units stay counted.
local marker = redis.call('GET', KEYS[3])
if not marker then
  -- Bumped too: a repair computed from a snapshot in which this order's deduct stood must not mark it
  -- (repair_avail.lua) after its release found nothing to give back.
  redis.call('SET', KEYS[3], 'T', 'EX', tonumber(ARGV[2]))
  redis.call('HDEL', KEYS[6], ARGV[1])
  redis.call('INCR', KEYS[4])
  return 3
end
local state = string.sub(marker, 1, 1)
if state == 'P' then
  redis.call('SET', KEYS[3], 'X', 'KEEPTTL')
  redis.call('INCR', KEYS[4])
  return 8
end
if state == 'X' then
  return 8
end
if state == 'R' or state == 'T' then
  return 2
end
if ARGV[3] == 'sold' then
  if state == 'H' then
    redis.call('HDEL', KEYS[2], ARGV[1])
    redis.call('SET', KEYS[3], 'C:' .. string.sub(marker, 3), 'KEEPTTL')
    redis.call('INCR', KEYS[4])
  end
  return 7
end
local qty = tonumber(string.sub(marker, 3))
-- A missing avail key means Redis lost the SKU: do not create it from one order's units; the SKU is
-- reloaded from the database instead.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('INCRBY', KEYS[1], qty)
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('SET', KEYS[3], 'R:' .. qty, 'EX', tonumber(ARGV[2]))
redis.call('INCR', KEYS[4])
return 1
