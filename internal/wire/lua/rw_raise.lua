-- Read-write fence raise. KEYS: writer, readers, counter. ARGV: mode,
-- token, fence, retention ms.
-- Reply: 1 if the token holds the lock in the mode, else 0 (atomically
-- with the raise).
if tonumber(redis.call('GET', KEYS[3]) or '0') < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[3], ARGV[3])
end
redis.call('PEXPIRE', KEYS[3], ARGV[4])
if ARGV[1] == 's' then
  if redis.call('ZSCORE', KEYS[2], ARGV[2]) then return 1 end
  return 0
end
local w = redis.call('GET', KEYS[1])
if w and tokenOf(w) == ARGV[2] then return 1 end
return 0
