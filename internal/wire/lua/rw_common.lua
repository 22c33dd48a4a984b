-- Prepended (after value.lua) to every read-write script. KEYS[1] writer
-- ("token at owner"), KEYS[2] readers (sorted set: token by expiry, server
-- ms). Drops the expired readers, and says what is left.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
-- lastReader: ms until the last reader's entry expires, nil when none.
local function lastReader()
  local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if top[1] then return tonumber(top[2]) - now end
  return nil
end
-- addReader sets the token's entry to expire in ttl ms; the set lives as
-- long as its last entry.
local function addReader(tok, ttl)
  redis.call('ZADD', KEYS[2], now + ttl, tok)
  redis.call('PEXPIRE', KEYS[2], lastReader())
end
-- firstReader: the smallest release id among the readers, the holder a
-- refused writer is told of, comparable with the writer's own id.
local function firstReader()
  local first
  for _, tok in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local id = rid(tok)
    if not first or id < first then first = id end
  end
  return first
end
