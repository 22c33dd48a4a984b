-- Release. KEYS: lock, tombstone of the token, trail.
-- ARGV: token, tombstone ms (0: none), channel ('' : none).
-- Deletes only the token's key, and with it the trail; announces
-- "<releaseID> <lock>" when this call deleted it (a resend announces
-- nothing), best effort (pcall: an ACL that forbids PUBLISH must not fail
-- releases). Waiters do not mark the key: a release is announced whether
-- or not anyone waits, so that waiting writes nothing to the holder's
-- value. The tombstone, when asked for, is left in every case: a request
-- of the token that lands later must not set the key. Without tombstone it
-- runs 3 commands: GET, DEL, PUBLISH (2 without channel).
local deleted = 0
local cur = redis.call('GET', KEYS[1])
if cur and tokenOf(cur) == ARGV[1] then
  -- The trail is ours, or (after a re-assertion) that of a holder before
  -- us whose lock we already took over: either way no longer news.
  redis.call('DEL', KEYS[1], KEYS[3])
  deleted = 1
  if ARGV[3] ~= '' then
    redis.pcall('PUBLISH', ARGV[3], string.sub(redis.sha1hex(ARGV[1]), 1, 16) .. ' ' .. KEYS[1])
  end
end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
return deleted
