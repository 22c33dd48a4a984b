-- Acquire. KEYS: lock (its record, see value.lua), tombstone of the token,
-- the node's record (see standing.lua).
-- ARGV: token, ttl ms, seed (client clock, µs), retention ms, max seed skew
-- µs, acquisition time (client clock, µs), owner, waiter ("1": the caller
-- waits for the release; a key another token holds is marked waited once,
-- its record's only change, so that its release is announced), recovery
-- period ms (0 or absent: the node's record is left alone), the
-- longest hold the client knows of (ms, see standing.lua), from ('' or
-- absent: none): a token of the same client handing the key over. A record
-- held by from (valid or expired, not evicted) is taken as a free key's:
-- the count incremented, no previous holder reported, the mark kept.
-- Reply: {1, fence, previous holder or false, standing} acquired (a
-- resend: the fence unchanged), {0, pttl, holder's release id, standing}
-- held by another, {0, 0, false, standing} refused by the token's
-- tombstone; standing as stand returns it, false when not asked. The
-- previous holder ("fence token at owner") is the record's when another
-- token held it and let it expire or was evicted. A new acquisition runs 3
-- commands: MGET, TIME and the record's SET (and EXISTS on a new key); a
-- refusal 2, and a SET more when it marks the holding.
local got = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])
local now, clock = nowMs()
local period = tonumber(ARGV[9] or '0')
local standing = false
if period > 0 then standing = stand(KEYS[3], got[3], period, clock, tonumber(ARGV[10] or '0')) end
if got[2] then
  return {0, 0, false, standing}
end
local wrong = notString(got[1], KEYS[1])
if wrong then return wrong end
local rec = parseRecord(got[1])
if rec and rec.old then
  return {0, redis.call('PTTL', KEYS[1]), rid(rec.token), standing}
end
local ttl = tonumber(ARGV[2])
local keep = math.max(tonumber(ARGV[4]), ttl)
local handed = rec and rec.token and rec.til > 0 and rec.token == (ARGV[11] or '')
if rec and rec.token and rec.til > now and not handed then
  if rec.token ~= ARGV[1] then
    if ARGV[8] == '1' and not rec.waited then
      redis.call('SET', KEYS[1], record(rec.count, rec.fence, rec.til, rec.token, rec.at, rec.owner, true), 'KEEPTTL')
    end
    return {0, rec.til - now, rid(rec.token), standing}
  end
  -- A resend: the holder's TTL is refreshed, the fence unchanged.
  redis.call('SET', KEYS[1], record(rec.count, rec.fence, now + ttl, rec.token, rec.at, rec.owner, rec.waited), 'PX', keep)
  return {1, num(rec.fence), false, standing}
end
local n
if rec then
  n = incr(rec.count)
else
  -- A missing record starts its fence from the client's seed when that is
  -- at most the skew ahead of this server's clock (every node of an
  -- attempt then agrees), else from the clock: never below it, so that
  -- fences keep growing after the node lost its data.
  local seed = tonumber(ARGV[3])
  if not (seed >= clock and seed - clock <= tonumber(ARGV[5])) then
    seed = clock
  end
  n = string.format('%d', seed + 1)
end
redis.call('SET', KEYS[1], record(n, n, now + ttl, ARGV[1], ARGV[6], ARGV[7], handed and rec.waited), 'PX', keep)
if rec and rec.token and rec.token ~= ARGV[1] and not handed then
  return {1, num(n), rec.fence .. ' ' .. rec.token .. ' ' .. rec.at .. ' ' .. rec.owner, standing}
end
return {1, num(n), false, standing}
