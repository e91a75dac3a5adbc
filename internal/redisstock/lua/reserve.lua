-- reserve: hold ARGV[2] units of one SKU for one order, atomically.
-- KEYS[1] inv:{SKU}:avail   KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:o:{ORDER}
-- KEYS[4] inv:{SKU}:ver (bumped on every change, for reconciliation's compare-and-set)
-- ARGV[1] order ID   ARGV[2] qty   ARGV[3] marker TTL in seconds
-- Returns 1 reserved, 2 duplicate (already held or confirmed), 3 sold out, 4 not loaded, 5 refused (released/tombstone).
-- The marker is checked BEFORE the stock, so a retry never takes stock twice and a late reserve never takes
-- stock after its compensation ran.
local marker = redis.call('GET', KEYS[3])
if marker then
  local state = string.sub(marker, 1, 1)
  if state == 'H' or state == 'C' then
    return 2
  end
  return 5
end
local avail = redis.call('GET', KEYS[1])
if not avail then
  return 4
end
local qty = tonumber(ARGV[2])
if tonumber(avail) < qty then
  return 3
end
redis.call('DECRBY', KEYS[1], qty)
redis.call('HSET', KEYS[2], ARGV[1], qty)
redis.call('SET', KEYS[3], 'H:' .. qty, 'EX', tonumber(ARGV[3]))
redis.call('INCR', KEYS[4])
return 1
