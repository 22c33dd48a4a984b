-- Raise the fence. KEYS: lock. ARGV: token, fence, retention ms.
-- Lifts the record's count to at least fence (a missing record is written
-- free with it), and the holder's fence too when the token holds or held
-- it; reports 1 if the token holds the key, else 0, atomically with the
-- raise. The record is kept at least the retention.
local rec = parseRecord(redis.call('GET', KEYS[1]))
if not rec then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 0
end
if rec.old then
  return 0
end
local now = nowMs()
local keep = tonumber(ARGV[3])
if not rec.token then
  redis.call('SET', KEYS[1], maxOf(rec.count, ARGV[2]), 'PX', keep)
  return 0
end
local fence = rec.fence
if rec.token == ARGV[1] then fence = maxOf(fence, ARGV[2]) end
redis.call('SET', KEYS[1], record(maxOf(rec.count, ARGV[2]), fence, rec.til, rec.token, rec.at, rec.owner, rec.waited), 'PX', math.max(keep, rec.til - now))
if rec.token == ARGV[1] and rec.til > now then
  return 1
end
return 0
