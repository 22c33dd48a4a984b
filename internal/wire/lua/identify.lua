-- Identify over a client that can only run scripts. Reply: {INFO server, INFO memory}.
return {redis.call('INFO', 'server'), redis.call('INFO', 'memory')}
