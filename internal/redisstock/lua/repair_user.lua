-- repair_user: square one order's entry in one user's count of a SKU with the database, only if the order's
-- marker and the entry are still exactly as reconciliation saw them (so a reserve or release running now
-- always wins).
-- KEYS[3] inv:{SKU}:o:{ORDER}   KEYS[4] inv:{SKU}:ver   KEYS[6] inv:{SKU}:u:{USER}
-- (KEYS[1], KEYS[2], KEYS[5] unused, passed so every script has the same keys)
-- ARGV[1] order ID   ARGV[2] action   ARGV[3] the marker as seen ('' when absent)
-- ARGV[4] the entry as seen ('' when absent)   ARGV[5] units (add)   ARGV[6] TTL in seconds (add)
-- actions: 'add'   the database counts the order (its deduct stands) and the user's count does not
--          'drop'  the user's count has the order, the database does not, and its marker is not 'H'
-- Returns 1 done, 4 raced (the marker or the entry changed since it was seen: nothing written).
local marker = redis.call('GET', KEYS[3]) or ''
local entry = redis.call('HGET', KEYS[6], ARGV[1]) or ''
if marker ~= ARGV[3] or entry ~= ARGV[4] then
  return 4
end
local state = string.sub(marker, 1, 1)
if ARGV[2] == 'add' then
  if entry ~= '' or state == 'R' or state == 'T' then
    return 4
  end
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[5])
  redis.call('EXPIRE', KEYS[6], tonumber(ARGV[6]))
  redis.call('INCR', KEYS[4])
  return 1
end
if ARGV[2] == 'drop' then
  if entry == '' or state == 'H' then
    return 4
  end
  redis.call('HDEL', KEYS[6], ARGV[1])
  redis.call('INCR', KEYS[4])
  return 1
end
return redis.error_reply('repair_user: unknown action ' .. tostring(ARGV[2]))
