-- Force release. KEYS: lock, tombstone of the token.
-- ARGV: token, fence, retention ms, tombstone ms (0: none), channel ('': none).
-- Raises the record's count to at least the evicted holder's fence,
-- tombstones its token, and ends its hold if the token holds the key
-- (announced as release.lua does, when waited for): the record keeps the holder,
-- evicted (until 0), for the next acquisition to report. Reply: 1 ended,
-- 0 not.
local rec = parseRecord(redis.call('GET', KEYS[1]))
if tonumber(ARGV[4]) > 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[4])
end
if rec and rec.old then
  return 0
end
if not rec then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 0
end
local count = maxOf(rec.count, ARGV[2])
if not rec.token then
  redis.call('SET', KEYS[1], count, 'PX', ARGV[3])
  return 0
end
local now = nowMs()
if rec.token == ARGV[1] and rec.til > now then
  redis.call('SET', KEYS[1], record(count, rec.fence, 0, rec.token, rec.at, rec.owner, rec.waited), 'PX', ARGV[3])
  if rec.waited and ARGV[5] ~= '' then
    redis.pcall('PUBLISH', ARGV[5], rid(ARGV[1]) .. ' ' .. KEYS[1])
  end
  return 1
end
redis.call('SET', KEYS[1], record(count, rec.fence, rec.til, rec.token, rec.at, rec.owner, rec.waited), 'PX', math.max(tonumber(ARGV[3]), rec.til - now))
return 0
