-- Prepended to every script that reads a lock key or a trail. A lock key
-- holds "token at owner" (or a bare token, from clients before owners);
-- clients before releases were always announced prefixed it with "!" when
-- a waiter asked for its release, and such values are still read. A trail
-- holds "fence token at owner". Tokens have no spaces and do not start
-- with "!".
local function tokenOf(v)
  if string.byte(v, 1) == 33 then v = string.sub(v, 2) end
  local i = string.find(v, ' ', 1, true)
  if i then return string.sub(v, 1, i - 1) end
  return v
end
local function trailToken(v)
  local i = string.find(v, ' ', 1, true)
  if not i then return '' end
  return tokenOf(string.sub(v, i + 1))
end
-- Lifts the fence of token's trail at key to at least fence: a node that
-- counted below the fence its acquisition settled on recorded its own count.
local function raiseTrail(key, token, fence)
  local trail = redis.call('GET', key)
  if trail and trailToken(trail) == token then
    local i = string.find(trail, ' ', 1, true)
    if tonumber(string.sub(trail, 1, i - 1)) < tonumber(fence) then
      redis.call('SET', key, fence .. string.sub(trail, i), 'KEEPTTL')
    end
  end
end
-- Parses a marker: "since creator touched stale keep" (see touchMarker);
-- markers written before touches were recorded lack the last fields.
local function parseMarker(v)
  local s, c, u, st, k = string.match(v or '', '^(%d+) ?(%d*) ?(%d*) ?(%d*) ?(%d*)')
  return tonumber(s), tonumber(c) or 0, tonumber(u), tonumber(st), tonumber(k)
end
-- Writes the marker at key: since, creator, the touch (clock, µs), its
-- stale and keep (ms), unless write is false and the marker as it stands
-- will do. A busy key's marker is then written once per stale, an eighth
-- of the marker retention (retain, ms), not once per call: its recorded
-- touch trails the key's last touch by at most its stale, which readers
-- take off the touch's age. It is kept keep ms plus twice stale from the
-- touch it records: once for the touch it may trail, once for another
-- node's marker of the key, touched up to stale later, which must look
-- untouched for the period before this one expires. It will do when its
-- touch is within its own stale and it is kept as long as this writer
-- would keep it.
local function touchMarker(key, m, clock, write, keep, retain)
  local since, creator, touched, stale, kept = m[1], m[2], m[3], m[4], m[5]
  local newStale = math.floor(retain / 8)
  if not write and touched and stale and kept and touched <= clock and clock - touched < stale * 1000
      and touched + (kept + 2 * stale) * 1000 >= clock + (keep + newStale) * 1000 then
    return
  end
  redis.call('SET', key, string.format('%d %d %d %d %d', since, creator, clock, newStale, keep), 'PX', keep + 2 * newStale)
end
