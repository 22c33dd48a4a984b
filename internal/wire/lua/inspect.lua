-- Inspect. KEYS: lock, the counter of a read-write lock of the same name,
-- and optionally the node's record (see standing.lua). Reply: {"token at
-- owner" of the holder or false, pttl, the larger count}, and with the
-- node's record its standing as it stands, unchanged: "V hold" when it
-- votes, "L id learned-ms key hold" (the step since the last one included,
-- as the next acquire would count it; a missing record as "L 0 0 key": it
-- would start learning).
local got = redis.call('MGET', KEYS[1], KEYS[2])
local v = got[1]
local wrong = notString(v, KEYS[1])
if wrong then return wrong end
local rec = parseRecord(v)
local now, clock = nowMs()
local reply = {false, 0, got[2] or '0'}
if rec and rec.old then
  reply[1], reply[2] = v, redis.call('PTTL', KEYS[1])
elseif rec then
  reply[3] = maxOf(rec.count, reply[3])
  if rec.token and rec.til > now then
    reply[1] = rec.token .. ' ' .. rec.at .. ' ' .. rec.owner
    reply[2] = rec.til - now
  end
end
if KEYS[3] then
  local state, id, learned, last, hold = standingOf(redis.call('GET', KEYS[3]))
  if state == 'V' then
    reply[4] = 'V' .. holdText(hold)
  elseif state then
    reply[4] = string.format('L %s %d %s', id, math.floor(step(learned, last, clock) / 1000), KEYS[3]) .. holdText(hold)
  else
    reply[4] = 'L 0 0 ' .. KEYS[3]
  end
end
return reply
