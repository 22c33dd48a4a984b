-- Inspect. KEYS: lock, counter. Reply: {token or false, pttl, counter}.
local cur = redis.call('GET', KEYS[1])
local ttl = 0
if cur then ttl = redis.call('PTTL', KEYS[1]) end
return {cur, ttl, redis.call('GET', KEYS[2]) or '0'}
