-- Inspect. KEYS: lock, counter, and optionally the node's record (see
-- standing.lua). Reply: {token or false, pttl, counter}, and with the
-- record the standing as it stands: "V", "L id learned-ms key" (the step
-- since the last one included, as the next acquire would count it; a
-- missing record as "L 0 0 key": it would start learning), unchanged.
local cur = redis.call('GET', KEYS[1])
local ttl = 0
if cur then ttl = redis.call('PTTL', KEYS[1]) end
local reply = {cur, ttl, redis.call('GET', KEYS[2]) or '0'}
if KEYS[3] then
  local v = redis.call('GET', KEYS[3])
  if v == 'V' then
    reply[4] = 'V'
  else
    local id, learned, last = string.match(v or '', '^L (%d+) (%d+) (%d+)$')
    if id then
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      learned = tonumber(learned) + math.min(math.max(now - tonumber(last), 0), 1000000)
      reply[4] = string.format('L %s %d %s', id, math.floor(learned / 1000), KEYS[3])
    else
      reply[4] = 'L 0 0 ' .. KEYS[3]
    end
  end
end
return reply
