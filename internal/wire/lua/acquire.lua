-- Acquire. KEYS: lock, counter, tombstone of the token, trail, the node's
-- record (see standing.lua).
-- ARGV: token, ttl ms, seed (client clock, µs), retention ms, max seed skew
-- µs, acquisition time (client clock, µs), owner, waiter (unused: a key held
-- by another is only read, whoever asks; releases are always announced),
-- recovery period ms (0 or absent: the record is left alone).
-- Reply: {1, counter, previous trail or false, standing} acquired (a
-- resend: the counter unchanged), {0, pttl, holder's release id, standing}
-- held by another, {0, 0, false, standing} refused by the token's
-- tombstone; standing as stand returns it, false when not asked. On a
-- voting node and a key used before, a new acquisition runs 4 commands:
-- MGET, then SET of the lock, the counter and the trail (TIME too when the
-- counter is missing).
local got = redis.call('MGET', KEYS[3], KEYS[2], KEYS[4], KEYS[5])
local period = tonumber(ARGV[9] or '0')
local standing = false
if period > 0 then standing = stand(KEYS[5], got[4], period) end
if got[1] then
  return {0, 0, false, standing}
end
local value = ARGV[1] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
local cur = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2], 'GET')
if cur then
  local tok = tokenOf(cur)
  if tok == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    return {1, got[2] or '0', false, standing}
  end
  return {0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(tok), 1, 16), standing}
end
local n
local count = tonumber(got[2])
if count and count < 2^53 then
  -- (Lua's doubles count exactly below 2^53.)
  n = string.format('%d', count + 1)
  redis.call('SET', KEYS[2], n, 'PX', ARGV[4])
elseif count then -- Redis counts exactly; read back as a string
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  n = redis.call('GET', KEYS[2])
else
  -- A missing counter starts from the client's seed when that is at most
  -- the skew ahead of this server's clock (every node of an attempt then
  -- agrees), else from the clock: never below it, so that fences keep
  -- growing after the node lost its data.
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local seed = tonumber(ARGV[3])
  if not (seed >= clock and seed - clock <= tonumber(ARGV[5])) then
    seed = clock
  end
  n = string.format('%d', seed + 1)
  redis.call('SET', KEYS[2], n, 'PX', ARGV[4])
end
-- The trail: ours now; the one we replace, if another token's, is a holder
-- that never released here.
redis.call('SET', KEYS[4], n .. ' ' .. value, 'PX', ARGV[4])
local prev = got[3]
if prev and trailToken(prev) ~= ARGV[1] then
  return {1, n, prev, standing}
end
return {1, n, false, standing}
