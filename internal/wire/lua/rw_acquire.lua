-- Read-write acquire. KEYS: writer, readers, intent, counter, tombstone of
-- the token. ARGV: mode ('s' shared, 'x' exclusive), token, ttl ms, seed
-- (client clock, µs), retention ms, max seed skew µs, acquisition time µs,
-- owner.
-- Reply: {1, counter} acquired (readers and resends: the counter as it
-- is; a new writer: incremented), {0, pttl, holder} refused (the writer's
-- release id; the smallest reader release id when readers hold it;
-- '-waiting-writer' when a writer's intent refuses a reader), {0, 0}
-- refused by the tombstone.
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {0, 0}
end
local tok, ttl = ARGV[2], tonumber(ARGV[3])
local w = redis.call('GET', KEYS[1])
-- As acquire.lua: a missing counter starts from the seed when it is at
-- most the skew ahead of this server's clock, else from the clock. Readers
-- start it too, so that a reader after data loss reads a count above the
-- writers' before the loss.
local function seedCounter()
  if redis.call('EXISTS', KEYS[4]) == 1 then return end
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local seed = tonumber(ARGV[4])
  if seed >= clock and seed - clock <= tonumber(ARGV[6]) then
    redis.call('SET', KEYS[4], ARGV[4])
  else
    redis.call('SET', KEYS[4], t[1] .. string.format('%06d', tonumber(t[2])))
  end
end
local function counter()
  seedCounter()
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
  return redis.call('GET', KEYS[4])
end
if ARGV[1] == 's' then
  if w then
    return {0, redis.call('PTTL', KEYS[1]), rid(tokenOf(w))}
  end
  local i = redis.call('GET', KEYS[3])
  if i then
    -- Writer preference: a reader that is not in yet (also one asking
    -- again after a split, whose entry is here) waits for the writer; its
    -- entry goes, as the attempt's cleanup skips a node that refused it.
    redis.call('ZREM', KEYS[2], tok)
    return {0, redis.call('PTTL', KEYS[3]), '-waiting-writer'}
  end
  addReader(tok, ttl)
  return {1, counter()}
end
if w then
  if tokenOf(w) == tok then
    redis.call('PEXPIRE', KEYS[1], ttl)
    return {1, counter()}
  end
  return {0, redis.call('PTTL', KEYS[1]), rid(tokenOf(w))}
end
local last = lastReader()
if last then
  -- Writer preference: our intent refuses new readers while we wait.
  redis.call('SET', KEYS[3], tok, 'PX', ttl)
  return {0, last, firstReader()}
end
redis.call('SET', KEYS[1], tok .. ' ' .. ARGV[7] .. ' ' .. ARGV[8], 'PX', ttl)
-- A writer got in: the intent (ours from an earlier attempt, or another
-- writer's, who asks again) is done.
redis.call('DEL', KEYS[3])
seedCounter()
local n = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[5])
return {1, n}
