package node

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua of the Redis node, one file per call. Each script gets every key
// it touches in KEYS (the lock, CounterKey, TombstoneKey), so that Redis
// Cluster routes it to the lock's slot. Each is idempotent for one token,
// since clients resend calls whose replies were lost.
var (
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/extend.lua
	extendLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/raise.lua
	raiseLua string
	//go:embed lua/inspect.lua
	inspectLua string
	//go:embed lua/identify.lua
	identifyLua string
)

var (
	acquireScript  = redis.NewScript(acquireLua)
	extendScript   = redis.NewScript(extendLua)
	releaseScript  = redis.NewScript(releaseLua)
	raiseScript    = redis.NewScript(raiseLua)
	inspectScript  = redis.NewScript(inspectLua)
	identifyScript = redis.NewScript(identifyLua)
)

// LuaScripts are the sources of the Redis node's scripts, for nodes over
// other Redis clients (rueidisnode), which must run the very same text (one
// SHA-1 in the server's cache). KEYS and ARGV are documented at the top of
// each source; the arguments are decimal strings, durations in whole
// milliseconds rounded up.
type LuaScripts struct {
	Acquire    string // KEYS lock, counter, tombstone; ARGV token, ttl, seed µs, retention, MaxSeedSkew µs
	Extend     string // one op; KEYS lock, counter, tombstone; ARGV token, ttl, fence, retention
	Release    string // KEYS lock, tombstone; ARGV token, tombstone (0: none), channel ("": none)
	RaiseFence string // KEYS lock, counter; ARGV token, fence, retention
	Inspect    string // KEYS lock, counter
	Identify   string // no keys; replies INFO server and INFO memory
}

// Scripts returns the Lua sources of the Redis node.
func Scripts() LuaScripts {
	return LuaScripts{
		Acquire:    acquireLua,
		Extend:     extendLua,
		Release:    releaseLua,
		RaiseFence: raiseLua,
		Inspect:    inspectLua,
		Identify:   identifyLua,
	}
}
