-- Extend one lock. KEYS: lock, counter, tombstone of the token, trail,
-- marker (touched as acquire touches it: its last-touch time set to now and
-- its expiry reset when that touch is older than its bound; a missing one
-- stays missing: the next acquire writes it).
-- ARGV: token, ttl ms, fence, retention ms, acquisition time µs, owner,
-- marker retention ms (optional).
-- Reply: 1 extended, 2 re-asserted a missing key, 0 not held (another
-- token holds it, or the token was released here).
local cur = redis.call('GET', KEYS[1])
local res = 1
if cur and tokenOf(cur) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
elseif cur or redis.call('EXISTS', KEYS[3]) == 1 then
  return 0
else
  redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[5] .. ' ' .. ARGV[6], 'PX', ARGV[2])
  res = 2
end
-- The counter never trails the lock's fence, and lives while the lock does,
-- as does the trail, which records the fence (this node may have counted
-- lower when it granted the lock).
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[3])
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
raiseTrail(KEYS[4], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
local m = {parseMarker(redis.call('GET', KEYS[5]))}
if m[1] then
  local t = redis.call('TIME')
  touchMarker(KEYS[5], m, tonumber(t[1]) * 1000000 + tonumber(t[2]), false,
    math.max(tonumber(ARGV[4]), tonumber(ARGV[2]), tonumber(ARGV[7] or '0')), tonumber(ARGV[7] or '0'))
end
return res
