-- repair_avail: set a SKU's counter to the database's truth, computed from the holds and markers as they are
-- at the moment the script runs, so it can never race a reserve, confirm or release of the same SKU.
-- KEYS[1] inv:{SKU}:avail   KEYS[2] inv:{SKU}:holds   KEYS[3] inv:{SKU}:ver
-- KEYS[4..] inv:{SKU}:o:{ORDER} of the pending releases, then of the open orders (ARGV below)
-- ARGV[1] mode: 'repair' (set the counter when it drifted and nothing changed since the snapshot),
--         'load' (set it only when it is missing and nothing changed since the snapshot: the cold-start load
--         on a reservation's path) or
--         'set' (set it whatever it is, and bump the version: the caller holds the database's lock on the
--         SKU, so no deduct or restore of it commits before the script has run; the admin stock change) or
--         'measure' (write nothing: the answer's target, with db.stock given as 0, is minus what the shard
--         owes, for the split of a SKU's stock over its shards, shards.go)
-- ARGV[2] db.stock as read in the database snapshot
-- ARGV[3] the counter in the caller's snapshot ('' when it was missing)
-- ARGV[4] the version in the caller's snapshot ('' when missing): every reserve, confirm, release and repair
--         bumps it, so an equal version means not one of them ran in between (no ABA)
-- ARGV[5] n, then ARGV[6..5+n]: orders whose DB deduct of this SKU stands (their units are out of db.stock)
-- ARGV[6+n] the marker TTL in seconds
-- ARGV[7+n] m, then ARGV[8+n..7+n+m]: the units of the open orders (not final) whose DB deduct of this SKU
--         stands, one per marker key of the last m KEYS. The target counts their units as taken (db.stock
--         does), so once the counter is written from it (or found equal to it) every one of them without a
--         marker gets 'C:<qty>': counted, and given back by its release. Such an order reserved through the
--         database alone while Redis was unreachable, or its marker was lost with Redis's data; without the
--         marker its release would find nothing, write a tombstone and leave Redis short of its units.
--         Every reserve, release and repair keeps the rule: an open order's standing deduct is counted in the
--         counter if and only if the order has a marker.
-- target = db.stock
--        - units of every hold whose order has no standing deduct (the DB still counts them)
--        - units of every pending release (DB restored, marker still 'C': the release will give them back)
-- Returns {code, counter before (or -1 when missing), target}: code 1 in line (measure: unchanged since the
-- snapshot), 2 already loaded (load mode),
-- 3 loaded (the counter was missing), 4 raced (Redis changed since the snapshot: nothing written),
-- 5 repaired (the counter was set to target).
-- Every number here is exact only up to 2^53 (a Lua number is a double): the stock is kept at or below that
-- (MaxStock in inventory.go).
local mode = ARGV[1]
local stock = tonumber(ARGV[2])
if not stock then
  return redis.error_reply('repair_avail: stock is not a number')
end
local deducted = {}
local n = tonumber(ARGV[5])
for i = 1, n do
  deducted[ARGV[5 + i]] = true
end
local ttl = tonumber(ARGV[6 + n])
local m = tonumber(ARGV[7 + n])
local lastPending = #KEYS - m
-- mark gives every open order without a marker its 'C' marker (see ARGV[7+n]).
local function mark()
  for j = 1, m do
    local key = KEYS[lastPending + j]
    if redis.call('EXISTS', key) == 0 then
      redis.call('SET', key, 'C:' .. ARGV[7 + n + j], 'EX', ttl)
    end
  end
end
local holds = redis.call('HGETALL', KEYS[2])
local owed = 0
for i = 1, #holds, 2 do
  if not deducted[holds[i]] then
    owed = owed + (tonumber(holds[i + 1]) or 0)
  end
end
for i = 4, lastPending do
  local marker = redis.call('GET', KEYS[i])
  if marker and string.sub(marker, 1, 1) == 'C' then
    owed = owed + (tonumber(string.sub(marker, 3)) or 0)
  end
end
local target = stock - owed
local unchanged = (redis.call('GET', KEYS[3]) or '') == ARGV[4]
local cur = redis.call('GET', KEYS[1])
if mode == 'measure' then
  local code = 1
  if not unchanged then
    code = 4
  end
  return {code, tonumber(cur or '-1'), target}
end
if mode == 'set' then
  -- Bumped even when the counter does not move: the database did, and a compare-and-set computed from the
  -- database as it was must not take an equal counter for "nothing happened".
  redis.call('SET', KEYS[1], target)
  redis.call('INCR', KEYS[3])
  mark()
  if not cur then
    return {3, -1, target}
  end
  cur = tonumber(cur)
  if cur == target then
    return {1, cur, target}
  end
  return {5, cur, target}
end
if not cur then
  -- A hold that was in the snapshot and was confirmed since left the hash, but the stock read before its
  -- deduct still counts its units: without the version check the counter would promise them again.
  if not unchanged then
    return {4, -1, target}
  end
  redis.call('SET', KEYS[1], target)
  redis.call('INCR', KEYS[3])
  mark()
  return {3, -1, target}
end
cur = tonumber(cur)
if mode == 'load' then
  return {2, cur, target}
end
if cur == target then
  -- In line: the counter counts what the target counts. The markers are written only from a snapshot that
  -- is still current (an order restored and released since it was read must not be marked).
  if unchanged then
    mark()
  end
  return {1, cur, target}
end
if ARGV[3] == '' or tonumber(ARGV[3]) ~= cur or not unchanged then
  return {4, cur, target}
end
redis.call('SET', KEYS[1], target)
redis.call('INCR', KEYS[3])
mark()
return {5, cur, target}
