-- Learn. KEYS: the node's record (see standing.lua). ARGV: recovery period
-- ms, the id of a learning record to promote ('': none).
-- Promotes the record when it is the learning one named (a round found
-- every node learning: a new deployment), else advances it as acquire
-- does. Reply: the standing, as stand returns it.
local v = redis.call('GET', KEYS[1])
if ARGV[2] ~= '' then
  local state, id = standingOf(v)
  if state == 'L' and id == ARGV[2] then
    redis.call('SET', KEYS[1], 'V')
    return 1
  end
end
return stand(KEYS[1], v, tonumber(ARGV[1]))
