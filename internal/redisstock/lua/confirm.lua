-- confirm: the DB deduct of this order committed, so its units are now out of db.stock; drop the hold.
-- KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:o:{ORDER}   (KEYS[1] unused, passed so every script has the same keys)
-- KEYS[4] inv:{SKU}:ver (bumped on every change, for reconciliation's compare-and-set)
-- ARGV[1] order ID
-- Returns 1 confirmed, 2 duplicate (already confirmed), 5 refused (released or tombstone), 6 no hold, 8 passed
-- (a shard the order's reserve walked past, 'P': the hold, if any, is on a shard further along, shards.go).
local marker = redis.call('GET', KEYS[3])
if not marker then
  return 6
end
local state = string.sub(marker, 1, 1)
if state == 'P' then
  return 8
end
if state == 'C' then
  return 2
end
if state ~= 'H' then
  return 5
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], 'C:' .. string.sub(marker, 3), 'KEEPTTL')
redis.call('INCR', KEYS[4])
return 1
