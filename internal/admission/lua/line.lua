-- line: one request's turn in a SKU's line at the order API's front door, and its admission (the units of
-- its line counted as being placed) when the turn is its own. Tickets are ordered by their holder's first
-- arrival; a ticket whose holder is not back by the time it was told (due) plus the grace leaves the line
-- when a call meets it at the front. A request is admitted when its units, and those of every live ticket
-- ahead of it, fit in what is free: the units left that are not being placed, and at most cap units of the
-- SKU being placed at once (the first in line is admitted whatever cap, when nothing is being placed).
--
-- A ticket far back is answered without ranking it: its position is the one last computed, less the tickets
-- that left the line since (every removal counts in meta's 'left'), and a new ticket that arrived after every
-- other is last. On a Redis whose sorted sets sort on every read (the embedded one) a rank or a range costs
-- the whole line, so only a ticket near its turn is ranked, and the front is looked at by far tickets at most
-- once a second (to drop the abandoned there, which no near ticket may be left to do).
--
-- KEYS[1] = inv:{SKU}:avail ; KEYS[2] = inv:{SKU}:admitting ; KEYS[3] = inv:{SKU}:admitting:by ;
-- KEYS[4] = inv:{SKU}:admitting:lease:<owner> ; KEYS[5] = inv:{SKU}:line ; KEYS[6] = inv:{SKU}:line:who ;
-- KEYS[7] = inv:{SKU}:line:admitted ; KEYS[8] = inv:{SKU}:line:meta (left, last, scanned)
-- ARGV[1] = ticket ('' = none: admitted only when it fits behind every live ticket) ; ARGV[2] = units ;
-- ARGV[3] = now (unix ms) ; ARGV[4] = first arrival (unix ms; a ticket in the line keeps its own) ;
-- ARGV[5] = the SKU's admissions per second as the caller measures them (> 0) ; ARGV[6] = the longest
-- Retry-After (s) ; ARGV[7] = grace (ms) ; ARGV[8] = cap ; ARGV[9] = owner ; ARGV[10] = lease (ms) ;
-- ARGV[11] = the keys' life (ms) ; ARGV[12] = units left on the SKU's other shards (0 when not split)
--
-- returns {code, position, length, admitted, abandoned, arrival, retry, wait}:
--   code 1 admitted (the ticket left the line), 0 in line (position: live tickets ahead of it as far as this
--   call knows, retry: seconds until it is due back, wait: its estimated wait in ms), 2 the SKU is not loaded
--   (nothing done: the workflow fails closed), 3 sold out (fewer units left than asked; the ticket left the line);
--   length the line's tickets, admitted the line's admissions so far, abandoned the tickets this call
--   dropped, arrival the ticket's first arrival.
local ticket, q, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local life, grace = ARGV[11], tonumber(ARGV[7])
local avail = redis.call('GET', KEYS[1])
if not avail then
  return {2, 0, 0, 0, 0, 0, 0, 0}
end
avail = tonumber(avail) + tonumber(ARGV[12])
if avail < q then
  if ticket ~= '' and redis.call('ZREM', KEYS[5], ticket) == 1 then
    redis.call('HDEL', KEYS[6], ticket)
    redis.call('HINCRBY', KEYS[8], 'left', 1)
  end
  return {3, 0, redis.call('ZCARD', KEYS[5]), 0, 0, 0, 0, 0}
end
local admitting = tonumber(redis.call('GET', KEYS[2]) or '0')
local free = math.min(avail, tonumber(ARGV[8])) - admitting
local near = math.max(free, 0) + 16
local admitted = tonumber(redis.call('GET', KEYS[7]) or '0')
local left = tonumber(redis.call('HGET', KEYS[8], 'left') or '0')
local arrival = tonumber(ARGV[4])

-- drop drops the abandoned tickets among the first n; returns the units of the live ones and the drops.
local function drop(n)
  local ahead, gone = 0, 0
  if n <= 0 then
    return 0, 0
  end
  for _, t in ipairs(redis.call('ZRANGE', KEYS[5], 0, n - 1)) do
    local w = redis.call('HGET', KEYS[6], t)
    local due, units = nil, nil
    if w then
      due, units = string.match(w, '^(%d+):(%d+)')
    end
    if not due or now > tonumber(due) + grace then
      redis.call('ZREM', KEYS[5], t)
      redis.call('HDEL', KEYS[6], t)
      gone = gone + 1
    else
      ahead = ahead + tonumber(units)
    end
  end
  if gone > 0 then
    left = redis.call('HINCRBY', KEYS[8], 'left', gone)
  end
  redis.call('HSET', KEYS[8], 'scanned', now)
  return ahead, gone
end

-- wait answers a ticket that is not in its turn: its due time and what the line knows of it are kept. Its
-- estimated wait is its place in the line at the line's pace; the holder is told to come back at half of it
-- (at least a second, at most the longest): back before its turn, so that the line is never waiting for
-- holders away, and its pace (measured from its admissions) can rise to what the placements allow instead of
-- staying at the pace it told its holders.
local function wait(position, gone, rankedAt)
  local est = math.ceil((position + 1) * 1000 / tonumber(ARGV[5]))
  local retry = math.min(math.max(math.ceil(est / 2000), 1), tonumber(ARGV[6]))
  if ticket ~= '' then
    redis.call('HSET', KEYS[6], ticket, string.format('%d:%d:%d:%d:%d', now + retry * 1000, q, position, left, rankedAt))
    redis.call('PEXPIRE', KEYS[5], life)
    redis.call('PEXPIRE', KEYS[6], life)
    redis.call('PEXPIRE', KEYS[8], life)
  end
  return {0, position, redis.call('ZCARD', KEYS[5]), admitted, gone, arrival, retry, est}
end

-- The front, looked at by far tickets at most once a second.
local function scanSoon()
  local scanned = tonumber(redis.call('HGET', KEYS[8], 'scanned') or '0')
  if now - scanned >= 1000 then
    local _, gone = drop(near)
    return gone
  end
  return 0
end

-- A ticket known far back: answered from its last position, less the tickets that left since.
local rank
if ticket ~= '' then
  local w = redis.call('HGET', KEYS[6], ticket)
  local pos, mark, rankedAt = nil, nil, nil
  if w then
    local due
    due, pos, mark, rankedAt = string.match(w, '^(%d+):%d+:(%d+):(%d+):(%d+)$')
    if due and now > tonumber(due) + grace then
      pos = nil -- late: ranked afresh (it keeps its place until a call drops it)
    end
  end
  local first = redis.call('ZSCORE', KEYS[5], ticket)
  if pos and first and now - tonumber(rankedAt) < 60000 then
    arrival = tonumber(first)
    local est = math.max(tonumber(pos) - (left - tonumber(mark)), 0)
    if est > near then
      local gone = scanSoon() -- the tickets it dropped were ahead of this one
      return wait(math.max(est - gone, 0), gone, tonumber(rankedAt))
    end
  end
  if first then
    arrival = tonumber(first)
    rank = redis.call('ZRANK', KEYS[5], ticket)
  else
    local last = tonumber(redis.call('HGET', KEYS[8], 'last') or '0')
    local n = redis.call('ZCARD', KEYS[5])
    redis.call('ZADD', KEYS[5], arrival, ticket)
    if arrival >= last then
      rank = n -- after every other ticket: last, without a rank
      redis.call('HSET', KEYS[8], 'last', arrival)
    else
      rank = redis.call('ZRANK', KEYS[5], ticket)
    end
  end
else
  rank = redis.call('ZCARD', KEYS[5])
end
if rank > near then
  local gone = scanSoon()
  return wait(math.max(rank - gone, 0), gone, now)
end
-- Near its turn: the tickets ahead that could still fit looked at, the abandoned among them dropped.
local look = math.min(rank, math.max(free, 0) + 8)
local ahead, gone = drop(look)
if look == rank and (ahead + q <= free or (ahead == 0 and admitting == 0)) then
  redis.call('INCRBY', KEYS[2], q)
  redis.call('HINCRBY', KEYS[3], ARGV[9], q)
  redis.call('SET', KEYS[4], 1, 'PX', ARGV[10])
  redis.call('PEXPIRE', KEYS[2], life)
  redis.call('PEXPIRE', KEYS[3], life)
  if ticket ~= '' then
    redis.call('ZREM', KEYS[5], ticket)
    redis.call('HDEL', KEYS[6], ticket)
    redis.call('HINCRBY', KEYS[8], 'left', 1)
  end
  admitted = redis.call('INCR', KEYS[7])
  redis.call('PEXPIRE', KEYS[7], life)
  return {1, 0, redis.call('ZCARD', KEYS[5]), admitted, gone, arrival, 0, 0}
end
return wait(rank - gone, gone, now)
