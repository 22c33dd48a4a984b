-- Inspect. KEYS: lock, counter, and optionally the marker. Reply: {token or
-- false, pttl, counter}, and with the marker its age (ms by this server's
-- clock, as acquire reports it: a marker from the future, the clock having
-- gone back, twice the keep it records, or its span when longer) or false when it is missing, and how long
-- ago an acquire or extension last touched it (ms) or false when unknown.
-- Inspect does not touch it.
local cur = redis.call('GET', KEYS[1])
local ttl = 0
if cur then ttl = redis.call('PTTL', KEYS[1]) end
local reply = {cur, ttl, redis.call('GET', KEYS[2]) or '0'}
if KEYS[3] then
  -- "since creator touched stale keep" (acquire.lua's touchMarker)
  local v = redis.call('GET', KEYS[3])
  local s, u, st, k = string.match(v or '', '^(%d+) ?%d* ?(%d*) ?(%d*) ?(%d*)')
  local since, touched, stale = tonumber(s or ''), tonumber(u or ''), tonumber(st or '') or 0
  local age, touchAge = false, false
  if since then
    local t = redis.call('TIME')
    local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
    local hi = math.max(since, touched or since)
    if hi > clock then -- the clock went back: old, as the next acquire dates it
      age = math.max(2 * (tonumber(k or '') or 0), math.floor((hi - since) / 1000))
    else
      age = math.floor((clock - since) / 1000)
    end
    if touched then touchAge = math.max(0, math.floor((clock - touched) / 1000) - stale) end
  end
  reply[4] = age
  reply[5] = touchAge
end
return reply
