-- Learn. KEYS: the node's record (see standing.lua). ARGV: recovery period
-- ms, the id of a learning record to promote ('': none), the longest hold
-- the client knows of (ms).
-- Promotes the record when it is the learning one named (a round found
-- every node learning: a new deployment), else advances it as acquire
-- does. Reply: the standing, as stand returns it.
local v = redis.call('GET', KEYS[1])
local period, told = tonumber(ARGV[1]), tonumber(ARGV[3] or '0')
if ARGV[2] ~= '' then
  local state, id, _, _, hold = standingOf(v)
  if state == 'L' and id == ARGV[2] then
    hold = math.max(hold, told)
    redis.call('SET', KEYS[1], 'V' .. holdText(hold))
    return voting(hold, math.max(period, told))
  end
end
return stand(KEYS[1], v, period, nil, told)
