-- Release. KEYS: lock, tombstone of the token.
-- ARGV: token, tombstone ms (0: none), channel ('' : none), from ('' or
-- absent: none; the tokens that handed the lock over in a row, separated
-- by spaces, whose releases are announced too).
-- Clears the record's holder when it is the token, unless evicted (the
-- count stays: the record is "count" from then on, and the next
-- acquisition took over from nobody; a holder that let its lock expire and
-- releases late is cleared too, without asking the clock), and announces
-- "<releaseID> <lock>" when this call cleared it and a waiter marked the
-- holding (a resend announces nothing), best effort (pcall: an ACL that
-- forbids PUBLISH must not fail releases). The tombstone, when asked for,
-- is left in every case: a request of the token that lands later must not
-- set the key. Without tombstone it runs 2 commands: GET, SET (and a
-- PUBLISH when waited for).
local deleted = 0
local rec = parseRecord(redis.call('GET', KEYS[1]))
if rec and not rec.old and rec.token == ARGV[1] and rec.til > 0 then
  redis.call('SET', KEYS[1], rec.count, 'KEEPTTL')
  deleted = 1
  if rec.waited and ARGV[3] ~= '' then
    redis.pcall('PUBLISH', ARGV[3], rid(ARGV[1]) .. ' ' .. KEYS[1])
    for from in string.gmatch(ARGV[4] or '', '[^ ]+') do
      redis.pcall('PUBLISH', ARGV[3], rid(from) .. ' ' .. KEYS[1])
    end
  end
end
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
return deleted
