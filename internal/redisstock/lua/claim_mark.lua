-- claim_mark: set the marker of one idempotency key to the nonce of its row's life, with a TTL a little
-- longer than the life has left, unless the marker already lives at least that long. A later life of the key
-- (a renewal, or a new row after the cleanup) always ends later than an earlier one, so a request or a
-- backfill that read an older life never overwrites the marker of a newer one. A marker with no expiry (none
-- is written so) is replaced.
-- KEYS[1] = idem:<marker> ; ARGV[1] = nonce ; ARGV[2] = TTL in milliseconds (> 0)
-- returns 1 when set, 0 when left as it was
local ttl = redis.call('PTTL', KEYS[1])
if ttl >= 0 and ttl >= tonumber(ARGV[2]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
