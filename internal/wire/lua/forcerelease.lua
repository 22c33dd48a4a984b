-- Force release. KEYS: lock, counter, tombstone of the token.
-- ARGV: token, fence, retention ms, tombstone ms (0: none), channel ('': none).
-- Raises the counter to at least the evicted holder's fence, tombstones its
-- token, and deletes the key if the token holds it (announcing it as
-- release.lua does). The trail stays, for the next acquisition to report.
-- Reply: 1 deleted, 0 not.
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if tonumber(ARGV[4]) > 0 then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[4])
end
local cur = redis.call('GET', KEYS[1])
if cur and tokenOf(cur) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[5] ~= '' then
    redis.pcall('PUBLISH', ARGV[5], string.sub(redis.sha1hex(ARGV[1]), 1, 16) .. ' ' .. KEYS[1])
  end
  return 1
end
return 0
