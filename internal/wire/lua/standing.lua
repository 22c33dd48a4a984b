-- Prepended to the scripts that judge a node's standing (node.Standing).
-- The node's record, one per server (per hash slot in a Redis Cluster):
-- "V" once it counts; "L id learned last" while it learns: id is the
-- server's time (µs) when the record was written (after the node lost its
-- data, or on a new deployment), learned how long (µs) it has kept its data
-- since, counted in steps of at most a second of its clock (a clock that
-- steps moves it on by a second at most), last the time (µs) of the last
-- step. Anything else reads as missing. It never expires: a node that lost
-- it lost its data.
local function standingOf(v)
  if v == 'V' then return 'V' end
  local id, learned, last = string.match(v or '', '^L (%d+) (%d+) (%d+)$')
  if id then return 'L', id, tonumber(learned), tonumber(last) end
  return nil
end
-- step is how long a learning record has learned at now (µs): what it
-- records, plus the time since its last step, at least 0 and at most a
-- second.
local function step(learned, last, now)
  return learned + math.min(math.max(now - last, 0), 1000000)
end
-- stand advances the record at key (value v) by the time since its last
-- step, writes it (a missing one as new), makes it "V" once it has learned
-- period ms, and returns the standing: 1 when it votes (a number: nothing
-- for the client to allocate), or "L id learned-ms key". now
-- is the server's time (µs) when the caller has read it.
local function stand(key, v, period, now)
  local state, id, learned, last = standingOf(v)
  if state == 'V' then return 1 end
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  if state then
    learned = step(learned, last, now)
  else
    id, learned = string.format('%d', now), 0
  end
  if learned >= period * 1000 then
    redis.call('SET', key, 'V')
    return 1
  end
  redis.call('SET', key, string.format('L %s %d %d', id, learned, now))
  return string.format('L %s %d %s', id, math.floor(learned / 1000), key)
end
