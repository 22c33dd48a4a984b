-- Extend one lock. KEYS: lock, counter, tombstone of the token, trail.
-- ARGV: token, ttl ms, fence, retention ms, acquisition time µs, owner.
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
return res
