-- Acquire. KEYS: lock, counter, tombstone of the token, trail, marker.
-- ARGV: token, ttl ms, seed (client clock, µs), retention ms, max seed skew µs,
-- acquisition time (client clock, µs), owner, waiter (unused: a key held
-- by another is only read, whoever asks; releases are always announced),
-- marker retention ms (optional).
-- Reply: {1, counter, previous trail or false, age, creator, touched}
-- acquired (a resend: the counter unchanged), {0, pttl, holder's release
-- id, age, creator, touched} held by another, {0, 0, false, age, creator,
-- touched} refused by the token's tombstone. age is how long, in ms by this
-- server's clock, the marker says this node has kept data for the key: the
-- marker holds "since creator touched stale keep", the server's time (µs)
-- when it was first written, the acquisition time (ARGV[6]) of the
-- acquisition that wrote it (0 in a marker written before creators were
-- recorded), the server's time of a touch by an acquire or extension, how
-- far (ms) that touch may trail the key's last one, and how long (ms) it
-- was kept beyond twice that (see touchMarker); touched is how long (ms)
-- before this call the key was last touched, at most (-1 when the marker
-- does not record it). It is written when missing and touched as
-- touchMarker says: a busy key's marker costs no write per acquire. A new
-- acquisition runs 5 commands (6 when it touches the marker): MGET, TIME,
-- then SET of the lock, the counter and the trail.
local got = redis.call('MGET', KEYS[3], KEYS[2], KEYS[4], KEYS[5])
local t = redis.call('TIME')
local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
local since, creator, touched, stale, kept = parseMarker(got[4])
local keep = math.max(tonumber(ARGV[4]), tonumber(ARGV[2]), tonumber(ARGV[9] or '0'))
local write = not since
if write then
  since, creator, touched = clock, math.max(tonumber(ARGV[6]) or 0, 0), clock
elseif math.max(since, touched or since) > clock then
  -- The server's clock went back: the node has kept its data since before
  -- the step, for how long its clock cannot tell. The marker stays old:
  -- dated twice keep before now (past any recovery period), or as far
  -- back as it spans, whichever is older, and touched now (the touch its
  -- record shows is at most stale ago, not in the future).
  since, write = clock - math.max(2 * keep * 1000, math.max(since, touched or since) - since), true
end
local touchAge = -1
if touched then touchAge = math.max(0, math.floor((clock - touched) / 1000) - (stale or 0)) end
touchMarker(KEYS[5], {since, creator, touched, stale, kept}, clock, write, keep, tonumber(ARGV[9] or '0'))
local age = math.floor((clock - since) / 1000)
if got[1] then
  return {0, 0, false, age, creator, touchAge}
end
local value = ARGV[1] .. ' ' .. ARGV[6] .. ' ' .. ARGV[7]
local cur = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2], 'GET')
if cur then
  local tok = tokenOf(cur)
  if tok == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    return {1, got[2] or '0', false, age, creator, touchAge}
  end
  return {0, redis.call('PTTL', KEYS[1]), string.sub(redis.sha1hex(tok), 1, 16), age, creator, touchAge}
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
  return {1, n, prev, age, creator, touchAge}
end
return {1, n, false, age, creator, touchAge}
