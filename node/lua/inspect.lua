-- Inspect. KEYS: lock, counter, and optionally the marker. Reply: {token or
-- false, pttl, counter}, and with the marker its age (ms by this server's
-- clock, as acquire reports it) or false when it is missing.
local cur = redis.call('GET', KEYS[1])
local ttl = 0
if cur then ttl = redis.call('PTTL', KEYS[1]) end
local reply = {cur, ttl, redis.call('GET', KEYS[2]) or '0'}
if KEYS[3] then
  local v = redis.call('GET', KEYS[3]) -- "since creator"
  local m = v and string.match(v, '^%d+')
  local since = m and tonumber(m)
  local age = false
  if since then
    local t = redis.call('TIME')
    age = math.max(0, math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2]) - since) / 1000))
  end
  reply[4] = age
end
return reply
