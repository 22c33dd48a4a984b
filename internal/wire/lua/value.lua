-- Prepended to every script that reads a lock key. A lock key holds its
-- record: "count fence until token at owner" while a token holds it, and
-- after, until an acquisition replaces it, when that token let it expire
-- (until, the server's ms, then lies in the past) or was evicted (until 0):
-- the trail the next acquisition reports; "count" once released. count is
-- the key's counter, fence the holder's (the count when it was granted,
-- raised by its extensions and fence raises; another token's raise lifts
-- the count only). Both are decimal strings, compared and incremented as
-- such (they may pass 2^53). Tokens have no spaces and do not start with
-- "!": a holder's token is written "!token" once a waiter found the key
-- held (rec.waited), so that its release is announced; a holding nobody
-- waited for is released without a PUBLISH. A value an older client wrote
-- ("token at owner", "!"-prefixed when a waiter marked it, with the key's
-- own expiry), or any value that is not a record, reads as held by its
-- first word for the key's PTTL, and is never changed.
local function tokenOf(v)
  if string.byte(v, 1) == 33 then v = string.sub(v, 2) end
  local i = string.find(v, ' ', 1, true)
  if i then return string.sub(v, 1, i - 1) end
  return v
end
-- bigger reports a > b for decimal strings without leading zeros.
local function bigger(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
-- incr adds one to a decimal string.
local function incr(s)
  local d = {string.byte(s, 1, -1)}
  for i = #d, 1, -1 do
    if d[i] ~= 57 then
      d[i] = d[i] + 1
      return string.char(unpack(d))
    end
    d[i] = 48
  end
  return '1' .. string.char(unpack(d))
end
local function parseRecord(v)
  if not v then return nil end
  local c, f, u, tok, at, owner = string.match(v, '^(%d+) (%d+) (%d+) (%S+) (%d+) ?(.*)$')
  if c then
    local waited = string.byte(tok, 1) == 33
    if waited then tok = string.sub(tok, 2) end
    return {count = c, fence = f, til = tonumber(u), token = tok, at = at, owner = owner, waited = waited}
  end
  c = string.match(v, '^(%d+)$')
  if c then return {count = c} end
  return {old = true, token = tokenOf(v)}
end
local function record(count, fence, til, token, at, owner, waited)
  if waited then token = '!' .. token end
  return count .. ' ' .. fence .. ' ' .. string.format('%d', til) .. ' ' .. token .. ' ' .. at .. ' ' .. owner
end
-- maxOf returns the larger of two decimal strings.
local function maxOf(a, b)
  if bigger(b, a) then return b end
  return a
end
local function rid(tok) return string.sub(redis.sha1hex(tok), 1, 16) end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- notString fails the call when the lock key holds another type than a
-- string (MGET reads it as missing): a key that is not a lock is never
-- changed. It costs a command only where the key is missing.
local function notString(v, key)
  if not v and redis.call('EXISTS', key) == 1 then
    return redis.error_reply('WRONGTYPE the lock key ' .. key .. ' holds a value that is not a lock')
  end
  return nil
end
-- num is a decimal string as the reply carries it: a number below 10^15
-- (exact in Lua's doubles, and no string for the client to allocate), the
-- string itself above.
local function num(s)
  if #s < 16 then return tonumber(s) end
  return s
end
