-- Read-write release. KEYS: writer, readers, intent, tombstone of the
-- token. ARGV: mode, token, tombstone ms (0: none), channel ('': none),
-- the lock's name (announced).
-- Deletes only the token's entry, announces "<releaseID> <name>" when this
-- call deleted it, and leaves the tombstone in every case. A writer's
-- intent stays (it ends when it expires or a writer gets in): a failed
-- attempt's cleanup can reach a node after the node refused the attempt,
-- and must not let new readers in ahead of the waiting writer there.
-- Reply: 1 deleted, 0 not.
local tok = ARGV[2]
local deleted = 0
if ARGV[1] == 's' then
  deleted = redis.call('ZREM', KEYS[2], tok)
else
  local w = redis.call('GET', KEYS[1])
  if w and tokenOf(w) == tok then
    redis.call('DEL', KEYS[1])
    deleted = 1
  end
end
if deleted == 1 and ARGV[4] ~= '' then
  redis.pcall('PUBLISH', ARGV[4], rid(tok) .. ' ' .. ARGV[5])
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[3])
end
return deleted
