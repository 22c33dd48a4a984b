-- Release. KEYS: lock, tombstone of the token, trail.
-- ARGV: token, tombstone ms (0: none), channel ('' : none).
-- Deletes only the token's key, and with it the trail; announces
-- "<releaseID> <lock>" only when this call deleted it and a waiter marked
-- it (a resend announces nothing), best effort (pcall: an ACL that forbids
-- PUBLISH must not fail releases). The tombstone, when asked for, is left
-- in every case: a request of the token that lands later must not set the
-- key. Without waiters or tombstone it runs 2 commands: GET, DEL.
local deleted = 0
local cur = redis.call('GET', KEYS[1])
if cur and tokenOf(cur) == ARGV[1] then
  -- The trail is ours, or (after a re-assertion) that of a holder before
  -- us whose lock we already took over: either way no longer news.
  redis.call('DEL', KEYS[1], KEYS[3])
  deleted = 1
  if ARGV[3] ~= '' and string.byte(cur, 1) == 33 then
    redis.pcall('PUBLISH', ARGV[3], string.sub(redis.sha1hex(ARGV[1]), 1, 16) .. ' ' .. KEYS[1])
  end
end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
return deleted
