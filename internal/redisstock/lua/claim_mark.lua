-- claim_mark: the marker of one idempotency key's row, for a caller that did not write the row's life (a
-- request that found the row, the backfill): set it where there is none, or make the same life's marker live
-- at least as long as asked (its row's life may have been extended since it was set); a marker of another
-- life is left alone (it may be a newer life's).
-- KEYS[1] = idem:<marker> ; ARGV[1] = nonce ; ARGV[2] = TTL in milliseconds
-- returns 1 when the marker carries the nonce for at least the TTL, 0 when another life's was left
local v = redis.call('GET', KEYS[1])
if v == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v ~= ARGV[1] then
  return 0
end
local left = redis.call('PTTL', KEYS[1])
if left >= 0 and left < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
