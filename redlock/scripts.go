package redlock

import "github.com/redis/go-redis/v9"

// The Lua scripts run atomically on each Redis node. Each is idempotent for
// the same token, because go-redis may resend a command whose reply was lost.
// KEYS[1] is the lock key, KEYS[2] its fence counter.

// acquireScript: set the key if free and count the acquisition; if the key is
// free the reply is {1, fence}; if held by our token {1, fence} again (a
// resent command); otherwise {0, holder's pttl}.
//
// A missing counter (a key never locked here, or a node that lost its data)
// starts from a clock in microseconds, not from zero: fences then keep
// growing across an empty restart of the nodes, as long as clocks move
// forward and a key is not locked a million times a second. The client
// passes its own clock as ARGV[3], the same value to every node of an
// attempt, so that their new counters agree and no second round is needed
// to settle the fence (fence.go); without it the node's clock is used.
var acquireScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
if cur then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 0 then
  local seed = ARGV[3]
  if not seed then
    local t = redis.call('TIME')
    seed = t[1] .. string.format('%06d', tonumber(t[2]))
  end
  redis.call('SET', KEYS[2], seed)
end
return {1, redis.call('INCR', KEYS[2])}
`)

// extendScript: 1 extended, 2 re-asserted a missing key (fence counter raised
// to ARGV[3] so that a node that lost its data cannot hand out older fences),
// 0 another token holds it.
var extendScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[3])
end
return 2
`)

// releaseScript: delete only our token's key. With ARGV[2], a channel name,
// a successful delete also publishes there the release's id (the first 16
// hex digits of the token's SHA-1: the same on every node, and not the
// token, which would let any subscriber release the lock), a space, and
// the key's name, so that waiters subscribed to the channel learn of the
// release at once and can tell the nodes' announcements of one release
// from a new release. The publish is
// best effort (redis.pcall: an ACL that forbids PUBLISH must not make
// releases fail) and happens only when this call deleted the key, so a
// resent release neither deletes nor announces twice.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] then
    redis.pcall('PUBLISH', ARGV[2], string.sub(redis.sha1hex(ARGV[1]), 1, 16) .. ' ' .. KEYS[1])
  end
  return 1
end
return 0
`)

// raiseFenceScript: lift the counter to ARGV[2]; report whether we hold the
// key, atomically with the raise.
var raiseFenceScript = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
`)

// inspectScript: {token or false, pttl, fence}.
var inspectScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local ttl = 0
if cur then ttl = redis.call('PTTL', KEYS[1]) end
return {cur, ttl, tonumber(redis.call('GET', KEYS[2]) or '0')}
`)
