-- Read-write extend of one holder. KEYS: writer, readers, intent, counter,
-- tombstone of the token. ARGV: mode, token, ttl ms, fence, retention ms,
-- acquisition time µs, owner.
-- Reply: 1 extended, 2 re-asserted a missing entry, 0 not held (a
-- conflicting holder, or the token was released here).
local tok, ttl = ARGV[2], tonumber(ARGV[3])
local w = redis.call('GET', KEYS[1])
local res = 1
if ARGV[1] == 's' then
  if not redis.call('ZSCORE', KEYS[2], tok) then
    if w or redis.call('EXISTS', KEYS[5]) == 1 then
      return 0
    end
    res = 2
  end
  addReader(tok, ttl)
elseif w and tokenOf(w) == tok then
  redis.call('PEXPIRE', KEYS[1], ttl)
elseif w or redis.call('EXISTS', KEYS[5]) == 1 or lastReader() then
  return 0
else
  redis.call('SET', KEYS[1], tok .. ' ' .. ARGV[6] .. ' ' .. ARGV[7], 'PX', ttl)
  redis.call('DEL', KEYS[3]) -- a writer got in: the intent is done
  res = 2
end
if tonumber(redis.call('GET', KEYS[4]) or '0') < tonumber(ARGV[4]) then
  redis.call('SET', KEYS[4], ARGV[4])
end
redis.call('PEXPIRE', KEYS[4], ARGV[5])
return res
