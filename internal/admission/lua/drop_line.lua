-- drop_line: a SKU that is sold out (no unit left at all) needs no line: every ticket in it would be told
-- sold out at its holder's next call, which the fast path answers before the line is asked. Drops the line;
-- a SKU whose stock is in shards is left alone (its other shards are other slots), as is one with units.
-- KEYS[1] = inv:{SKU}:avail ; KEYS[2] = inv:{SKU}:shards ; KEYS[3] = inv:{SKU}:line ; KEYS[4] = inv:{SKU}:line:who
-- returns the tickets dropped, or -1 when the line stays
local avail = tonumber(redis.call('GET', KEYS[1]) or '-1')
if avail ~= 0 or tonumber(redis.call('GET', KEYS[2]) or '1') > 1 then
  return -1
end
local n = redis.call('ZCARD', KEYS[3])
redis.call('DEL', KEYS[3], KEYS[4])
return n
