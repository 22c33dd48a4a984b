-- Extend one lock. KEYS: lock, tombstone of the token.
-- ARGV: token, ttl ms, fence, retention ms, acquisition time µs, owner.
-- Reply: 1 extended, 2 re-asserted a key no token holds (free, released,
-- or whose holder let it expire), 0 not held (another token holds it, or
-- the token was released here). The record's count and the holder's
-- fence are raised to at least the lock's (this node may have counted lower
-- when it granted the lock), and the record kept for the retention.
local got = redis.call('MGET', KEYS[1], KEYS[2])
local wrong = notString(got[1], KEYS[1])
if wrong then return wrong end
local rec = parseRecord(got[1])
if rec and rec.old then
  return 0
end
local now = nowMs()
local res, at, owner = 2, ARGV[5], ARGV[6]
if rec and rec.token and rec.til > now then
  if rec.token ~= ARGV[1] then
    return 0
  end
  res, at, owner = 1, rec.at, rec.owner
elseif got[2] then
  return 0
end
local count, fence = ARGV[3], ARGV[3]
if rec then
  count = maxOf(rec.count, count)
  if res == 1 then fence = maxOf(rec.fence, fence) end
end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], record(count, fence, now + ttl, ARGV[1], at, owner, rec and rec.waited and rec.token == ARGV[1]), 'PX', math.max(tonumber(ARGV[4]), ttl))
return res
