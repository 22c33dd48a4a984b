-- Acquire. KEYS: lock, counter, tombstone of the token, trail.
-- ARGV: token, ttl ms, seed (client clock, µs), retention ms, max seed skew µs,
-- acquisition time (client clock, µs), owner.
-- Reply: {1, counter[, previous trail]} acquired (a resend: the counter
-- unchanged), {0, pttl, holder's release id} held by another, {0, 0}
-- refused by the token's tombstone.
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {0, 0}
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local tok = tokenOf(cur)
  if tok == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    return {1, redis.call('GET', KEYS[2]) or '0'}
  end
  return {0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(tok), 1, 16)}
end
local value = ARGV[1] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- A missing counter starts from the client's seed when it is at most
  -- the skew ahead of this server's clock (every node of an attempt then
  -- agrees), else from the clock: never below it, so that fences keep
  -- growing after the node lost its data.
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local seed = tonumber(ARGV[3])
  if seed >= clock and seed - clock <= tonumber(ARGV[5]) then
    redis.call('SET', KEYS[2], ARGV[3])
  else
    redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
  end
end
local n = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
-- The trail: ours now; the one we replace, if another token's, is a holder
-- that never released here. (Counters stay below 2^53, exact in Lua.)
local prev = redis.call('SET', KEYS[4], string.format('%d', n) .. ' ' .. value, 'PX', ARGV[4], 'GET')
if prev and trailToken(prev) ~= ARGV[1] then
  return {1, n, prev}
end
return {1, n}
