-- unadmit: a placement that RedisStock.Admit counted is decided (or gave up): take its units off the count.
-- KEYS[1] = inv:{SKU}:admitting ; ARGV[1] = qty ; returns the count left (never below 0)
local left = redis.call('DECRBY', KEYS[1], tonumber(ARGV[1]))
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
return left
