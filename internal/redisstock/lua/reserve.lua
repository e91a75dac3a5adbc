-- reserve: hold ARGV[2] units of one SKU for one order, atomically.
-- KEYS[1] inv:{SKU}:avail   KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:o:{ORDER}
-- KEYS[4] inv:{SKU}:ver (bumped on every change, for reconciliation's compare-and-set)
-- KEYS[5] inv:{SKU}:limit (the per-user limit; missing or 0 = none)
-- KEYS[6] inv:{SKU}:u:{USER} (hash order ID -> units of the SKU this user holds or bought, per order)
-- ARGV[1] order ID   ARGV[2] qty   ARGV[3] marker TTL in seconds   ARGV[4] user ID ('' = not known: no
-- per-user count in Redis; the database deduct still enforces the limit)
-- ARGV[5] 'walk' when these keys are one shard of a SKU whose stock is split over several (shards.go): a shard
--         found short gets the marker 'P' (passed) and the walk goes on to the next shard; a 'P' found says an
--         attempt of this order passed here before, and the walk goes on without looking at the stock.
-- Returns 1 reserved, 2 duplicate (already held or confirmed), 3 sold out (walk: 'P' written), 4 not loaded,
-- 5 refused (released/tombstone), 8 passed before (walk only), or {6, held, limit} when the user's units
-- would pass the per-user limit.
-- The marker is checked BEFORE the stock and the user's count, so a retry never takes stock or counts twice
-- and a late reserve never takes stock after its compensation ran.
local walk = ARGV[5] == 'walk'
local marker = redis.call('GET', KEYS[3])
if marker then
  local state = string.sub(marker, 1, 1)
  if state == 'H' or state == 'C' then
    return 2
  end
  if state == 'P' and walk then
    return 8
  end
  return 5
end
local avail = redis.call('GET', KEYS[1])
if not avail then
  return 4
end
local qty = tonumber(ARGV[2])
local limit = tonumber(redis.call('GET', KEYS[5]) or '0')
local counted = limit > 0 and ARGV[4] ~= ''
if counted then
  local held = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[6])) do
    held = held + tonumber(v)
  end
  if held + qty > limit then
    return {6, held, limit}
  end
end
if tonumber(avail) < qty then
  if walk then
    redis.call('SET', KEYS[3], 'P', 'EX', tonumber(ARGV[3]))
    redis.call('INCR', KEYS[4]) -- every marker written moves the version (models/shards.pml's default)
  end
  return 3
end
redis.call('DECRBY', KEYS[1], qty)
redis.call('HSET', KEYS[2], ARGV[1], qty)
redis.call('SET', KEYS[3], 'H:' .. qty, 'EX', tonumber(ARGV[3]))
if counted then
  redis.call('HSET', KEYS[6], ARGV[1], qty)
  redis.call('EXPIRE', KEYS[6], tonumber(ARGV[3]))
end
redis.call('INCR', KEYS[4])
return 1
