-- line: one request's turn in a SKU's line at the order API's front door, and its admission (the units of
-- its line counted as being placed) when the turn is its own. Tickets are ordered by their holder's first
-- arrival; a ticket whose holder is not back by the time it was told (due) plus the grace leaves the line
-- when a call meets it at the front. A request is admitted when its units, and those of every live ticket
-- ahead of it, fit in what is free: the units left that are not being placed, and at most cap units of the
-- SKU being placed at once (the first in line is admitted whatever cap, when nothing is being placed).
--
-- KEYS[1] = inv:{SKU}:avail ; KEYS[2] = inv:{SKU}:admitting ; KEYS[3] = inv:{SKU}:admitting:by ;
-- KEYS[4] = inv:{SKU}:admitting:lease:<owner> ; KEYS[5] = inv:{SKU}:line ; KEYS[6] = inv:{SKU}:line:who ;
-- KEYS[7] = inv:{SKU}:line:admitted
-- ARGV[1] = ticket ('' = none: admitted only when it fits behind every live ticket) ; ARGV[2] = units ;
-- ARGV[3] = now (unix ms) ; ARGV[4] = first arrival (unix ms; a ticket in the line keeps its own) ;
-- ARGV[5] = the SKU's admissions per second as the caller measures them (> 0) ; ARGV[6] = the longest
-- Retry-After (s) ; ARGV[7] = grace (ms) ; ARGV[8] = cap ; ARGV[9] = owner ; ARGV[10] = lease (ms) ;
-- ARGV[11] = the keys' life (ms) ; ARGV[12] = units left on the SKU's other shards (0 when not split)
--
-- returns {code, position, length, admitted, abandoned, arrival, retry}:
--   code 1 admitted (the ticket left the line), 0 in line (position: live tickets ahead of it as far as this
--   call looked, retry: seconds until it is due back), 2 the SKU is not loaded (nothing done: the workflow
--   fails closed), 3 sold out (fewer units left than asked; the ticket left the line);
--   length the line's tickets, admitted the line's admissions so far, abandoned the tickets this call
--   dropped, arrival the ticket's first arrival.
local ticket, q, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local avail = redis.call('GET', KEYS[1])
if not avail then
  return {2, 0, 0, 0, 0, 0, 0}
end
avail = tonumber(avail) + tonumber(ARGV[12])
if avail < q then
  if ticket ~= '' then
    redis.call('ZREM', KEYS[5], ticket)
    redis.call('HDEL', KEYS[6], ticket)
  end
  return {3, 0, redis.call('ZCARD', KEYS[5]), 0, 0, 0, 0}
end
local admitting = tonumber(redis.call('GET', KEYS[2]) or '0')
local arrival = tonumber(ARGV[4])
local rank
if ticket ~= '' then
  redis.call('ZADD', KEYS[5], 'NX', arrival, ticket)
  arrival = tonumber(redis.call('ZSCORE', KEYS[5], ticket))
  rank = redis.call('ZRANK', KEYS[5], ticket)
else
  rank = redis.call('ZCARD', KEYS[5])
end
local free = math.min(avail, tonumber(ARGV[8])) - admitting
-- Look at the tickets ahead that could still fit, and a few more to drop those abandoned.
local look = math.min(rank, math.max(free, 0) + 8)
local ahead, gone, grace = 0, 0, tonumber(ARGV[7])
if look > 0 then
  for _, t in ipairs(redis.call('ZRANGE', KEYS[5], 0, look - 1)) do
    local w = redis.call('HGET', KEYS[6], t)
    local c = w and string.find(w, ':', 1, true)
    if not c or now > tonumber(string.sub(w, 1, c - 1)) + grace then
      redis.call('ZREM', KEYS[5], t)
      redis.call('HDEL', KEYS[6], t)
      gone = gone + 1
    else
      ahead = ahead + tonumber(string.sub(w, c + 1))
    end
  end
end
local life = ARGV[11]
if look == rank and (ahead + q <= free or (ahead == 0 and admitting == 0)) then
  redis.call('INCRBY', KEYS[2], q)
  redis.call('HINCRBY', KEYS[3], ARGV[9], q)
  redis.call('SET', KEYS[4], 1, 'PX', ARGV[10])
  redis.call('PEXPIRE', KEYS[2], life)
  redis.call('PEXPIRE', KEYS[3], life)
  if ticket ~= '' then
    redis.call('ZREM', KEYS[5], ticket)
    redis.call('HDEL', KEYS[6], ticket)
  end
  local admitted = redis.call('INCR', KEYS[7])
  redis.call('PEXPIRE', KEYS[7], life)
  return {1, 0, redis.call('ZCARD', KEYS[5]), admitted, gone, arrival, 0}
end
local position = rank - gone
local retry = math.min(math.max(math.ceil((position + 1) / tonumber(ARGV[5])), 1), tonumber(ARGV[6]))
if ticket ~= '' then
  redis.call('HSET', KEYS[6], ticket, string.format('%d:%d', now + retry * 1000, q))
  redis.call('PEXPIRE', KEYS[5], life)
  redis.call('PEXPIRE', KEYS[6], life)
end
local admitted = tonumber(redis.call('GET', KEYS[7]) or '0')
return {0, position, redis.call('ZCARD', KEYS[5]), admitted, gone, arrival, retry}
