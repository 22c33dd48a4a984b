-- Prepended to the scripts that judge a node's standing (node.Standing).
-- The node's record, one per server (per hash slot in a Redis Cluster):
-- "V hold" once it counts; "L id learned last hold" while it learns: id is
-- the server's time (µs) when the record was written (after the node lost
-- its data, or on a new deployment), learned how long (µs) it has kept its
-- data since, counted in steps of at most a second of its clock (a clock
-- that steps moves it on by a second at most), last the time (µs) of the
-- last step; hold (ms, optional) the longest hold clients told it of. A
-- learner votes once it has learned the period and the hold. Anything else
-- reads as missing. It never expires: a node that lost it lost its data.
local function standingOf(v)
  v = v or ''
  local hold = string.match(v, '^V ?(%d*)$')
  if hold then return 'V', nil, nil, nil, tonumber(hold) or 0 end
  local id, learned, last, h = string.match(v, '^L (%d+) (%d+) (%d+) ?(%d*)$')
  if id then return 'L', id, tonumber(learned), tonumber(last), tonumber(h) or 0 end
  return nil, nil, nil, nil, 0
end
-- step is how long a learning record has learned at now (µs): what it
-- records, plus the time since its last step, at least 0 and at most a
-- second.
local function step(learned, last, now)
  return learned + math.min(math.max(now - last, 0), 1000000)
end
-- holdText is the hold as a record or a reply carries it: '' when none.
local function holdText(hold)
  if hold > 0 then return string.format(' %d', hold) end
  return ''
end
-- voting is a voter's standing as a reply carries it: 1 (a number: nothing
-- for the client to allocate) unless its hold is longer than known, the
-- longer of the period and the hold the caller told (it tells the caller
-- only what it lacks).
local function voting(hold, known)
  if hold > known then return 'V' .. holdText(hold) end
  return 1
end
-- stand advances the record at key (value v) by the time since its last
-- step, writes it (a missing one as new) with the longer of its hold and
-- told (ms), makes it vote once it has learned period ms and its hold, and
-- returns the standing: voting's, or "L id learned-ms key hold". now is
-- the server's time (µs) when the caller has read it.
local function stand(key, v, period, now, told)
  local state, id, learned, last, hold = standingOf(v)
  told = told or 0
  if state == 'V' then
    if told > hold then
      hold = told
      redis.call('SET', key, 'V' .. holdText(hold))
    end
    return voting(hold, math.max(period, told))
  end
  hold = math.max(hold, told)
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  if state then
    learned = step(learned, last, now)
  else
    id, learned = string.format('%d', now), 0
  end
  if learned >= math.max(period, hold) * 1000 then
    redis.call('SET', key, 'V' .. holdText(hold))
    return voting(hold, math.max(period, told))
  end
  redis.call('SET', key, string.format('L %s %d %d', id, learned, now) .. holdText(hold))
  return string.format('L %s %d %s', id, math.floor(learned / 1000), key) .. holdText(hold)
end
