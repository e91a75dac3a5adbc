-- load: set the units Redis may promise for one SKU from the database's stock, net of the holds, atomically.
-- KEYS[1] inv:{SKU}:avail   KEYS[2] inv:{SKU}:holds
-- ARGV[1] the SKU's stock in the database
-- Returns {avail, held}: avail = stock - held, where held is the sum of the holds hash (units reserved by
-- orders whose DB deduct has not been confirmed yet). avail may be negative when the stock was set below what
-- is held: those orders' deducts then fail and their releases bring it back, so it is never clamped (a clamp
-- would let the releases promise units the database does not have).
local stock = tonumber(ARGV[1])
if not stock then
  return redis.error_reply('load: stock is not a number')
end
local held = 0
for _, q in ipairs(redis.call('HVALS', KEYS[2])) do
  held = held + tonumber(q)
end
local avail = stock - held
redis.call('SET', KEYS[1], avail)
return {avail, held}
