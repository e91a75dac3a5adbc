-- admit: the order API's gate before it starts an order's workflow, for one SKU line. It counts the units of
-- orders being placed right now (admitted, their reservation not decided yet) and refuses a line that would
-- take that count past what Redis still has, so a flash sale starts about as many workflows as it has units
-- instead of one per buyer. It only ever refuses: the Lua reserve inside the workflow stays the gate.
-- KEYS[1] = inv:{SKU}:avail, KEYS[2] = inv:{SKU}:admitting
-- ARGV[1] = qty, ARGV[2] = seconds the count lives after its last admission (longer than any placement)
-- returns 1 admitted (counted), 0 refused, 2 SKU not loaded (not counted: the workflow fails closed)
local avail = redis.call('GET', KEYS[1])
if not avail then
  return 2
end
local qty = tonumber(ARGV[1])
local admitting = tonumber(redis.call('GET', KEYS[2]) or '0')
if admitting + qty > tonumber(avail) then
  return 0
end
redis.call('INCRBY', KEYS[2], qty)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
return 1
