-- claim_forget: delete the marker of one idempotency key only while it still carries the nonce of the row's
-- life that the cleanup deleted: a marker set since by a new life of the key stays.
-- KEYS[1] = idem:<marker> ; ARGV[1] = nonce
-- returns 1 when deleted, 0 when not
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
