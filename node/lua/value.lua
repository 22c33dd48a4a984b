-- Prepended to every script that reads a lock key or a trail. A lock key
-- holds "token at owner" (or a bare token, from clients before owners); a
-- trail holds "fence token at owner". Tokens have no spaces.
local function tokenOf(v)
  local i = string.find(v, ' ', 1, true)
  if i then return string.sub(v, 1, i - 1) end
  return v
end
local function trailToken(v)
  local i = string.find(v, ' ', 1, true)
  if not i then return '' end
  return tokenOf(string.sub(v, i + 1))
end
