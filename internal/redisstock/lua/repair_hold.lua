-- repair_hold: bring one order's hold and marker of one SKU back in line, only if they are still exactly as
-- reconciliation saw them (so a reserve, confirm or release running now always wins). It never touches the
-- counter: repair_avail sets it from the database afterwards, so a dropped hold can only leave Redis
-- promising less for a moment, never more.
-- KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:o:{ORDER}   KEYS[4] inv:{SKU}:ver (bumped by every write)
-- (KEYS[1] unused, passed so every script has the same keys)
-- ARGV[1] order ID   ARGV[2] action   ARGV[3] the marker as seen ('' when absent)   ARGV[4] the hold as seen ('' when absent)
-- ARGV[5] marker TTL in seconds (for a marker written anew)
-- actions: 'drop'     remove a hold whose marker is not 'H' (a stray hold)
--          'readd'    put back the hold of an 'H' marker that has none
--          'release'  end a hold whose order is closed or unknown: hold removed, marker 'R:<qty>'
--          'confirm'  end a hold whose DB deduct stands: hold removed, marker 'C:<qty>'
-- Returns 1 done, 4 raced (the hold or the marker changed since it was seen: nothing written).
local marker = redis.call('GET', KEYS[3]) or ''
local hold = redis.call('HGET', KEYS[2], ARGV[1]) or ''
if marker ~= ARGV[3] or hold ~= ARGV[4] then
  return 4
end
local action = ARGV[2]
if action == 'drop' then
  if hold == '' or string.sub(marker, 1, 1) == 'H' then
    return 4
  end
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('INCR', KEYS[4])
  return 1
end
if string.sub(marker, 1, 2) ~= 'H:' then
  return 4
end
local qty = string.sub(marker, 3)
if action == 'readd' then
  if hold ~= '' then
    return 4
  end
  redis.call('HSET', KEYS[2], ARGV[1], qty)
  redis.call('INCR', KEYS[4])
  return 1
end
if action == 'release' then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('SET', KEYS[3], 'R:' .. qty, 'EX', tonumber(ARGV[5]))
  redis.call('INCR', KEYS[4])
  return 1
end
if action == 'confirm' then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('SET', KEYS[3], 'C:' .. qty, 'KEEPTTL')
  redis.call('INCR', KEYS[4])
  return 1
end
return redis.error_reply('repair_hold: unknown action ' .. tostring(action))
