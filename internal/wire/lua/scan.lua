-- Scan over a client that can only run scripts. No keys.
-- ARGV: cursor, match, count. Reply: SCAN's {cursor, keys}.
return redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
