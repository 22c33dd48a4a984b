-- Raise the fence. KEYS: lock, counter. ARGV: token, fence, retention ms.
-- Reply: 1 if the lock holds the token, else 0 (atomically with the raise).
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
