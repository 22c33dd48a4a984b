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
