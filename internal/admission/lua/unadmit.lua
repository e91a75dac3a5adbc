-- unadmit: a placement that RedisStock.Admit counted is decided (or gave up): take its units off its
-- process's count and off the total, never more than the process's count still has (a reap may have dropped
-- it: the process's lease lapsed), so nothing is taken off twice.
-- KEYS[1] = inv:{SKU}:admitting ; KEYS[2] = inv:{SKU}:admitting:by ; ARGV[1] = qty ; ARGV[2] = owner
-- returns the units taken off
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
local qty = math.min(held, tonumber(ARGV[1]))
if qty <= 0 then
  return 0
end
if held - qty <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[2])
else
  redis.call('HINCRBY', KEYS[2], ARGV[2], -qty)
end
if redis.call('DECRBY', KEYS[1], qty) <= 0 then
  redis.call('DEL', KEYS[1])
end
return qty
