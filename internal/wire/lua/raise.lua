-- Raise the fence. KEYS: lock, counter, trail. ARGV: token, fence, retention ms.
-- Reply: 1 if the lock holds the token, else 0 (atomically with the raise).
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
-- The token's trail records the fence the lock settled on.
raiseTrail(KEYS[3], ARGV[1], ARGV[2])
local cur = redis.call('GET', KEYS[1])
if cur and tokenOf(cur) == ARGV[1] then
  return 1
end
return 0
