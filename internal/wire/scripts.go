package wire

import (
	_ "embed"
	"strconv"

	"github.com/quorumlock/quorumlock/node"
)

// The Lua of the Redis node, one file per call. Each script gets every key
// it touches in KEYS (the lock, TombstoneKey, the node's record), so that Redis
// Cluster routes it to the lock's slot. Each is idempotent for one token,
// since clients resend calls whose replies were lost. The scripts that read
// a lock key's value start with lua/value.lua, which parses it.
var (
	//go:embed lua/value.lua
	valueLua string
	//go:embed lua/standing.lua
	standingLua string
	//go:embed lua/learn.lua
	learnLua string
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
	//go:embed lua/forcerelease.lua
	forceReleaseLua string
	//go:embed lua/scan.lua
	scanLua string
)

var src = LuaScripts{
	Acquire:      valueLua + standingLua + acquireLua,
	Learn:        standingLua + learnLua,
	Extend:       valueLua + extendLua,
	Release:      valueLua + releaseLua,
	RaiseFence:   valueLua + raiseLua,
	Inspect:      valueLua + standingLua + inspectLua,
	Identify:     identifyLua,
	ForceRelease: valueLua + forceReleaseLua,
}

// LuaScripts are the sources of the Redis node's scripts, for nodes over
// other Redis clients (rueidisnode), which must run the very same text (one
// SHA-1 in the server's cache). KEYS and ARGV are documented at the top of
// each source; the arguments are decimal strings, durations in whole
// milliseconds rounded up.
// Times are µs since the Unix epoch ("0": unknown).
type LuaScripts struct {
	Acquire      string // KEYS lock, tombstone, node's record; ARGV token, ttl, seed µs, retention, MaxSeedSkew µs, at µs, owner, waiter ("1" or "0"), recovery, hold (AcquireScriptArgs builds them all)
	Learn        string // KEYS record; ARGV recovery, id to promote ("": none)
	Extend       string // one op; KEYS lock, tombstone; ARGV token, ttl, fence, retention, at µs, owner
	Release      string // KEYS lock, tombstone; ARGV token, tombstone (0: none), channel ("": none)
	RaiseFence   string // KEYS lock; ARGV token, fence, retention
	Inspect      string // KEYS lock, read-write counter[, node's record]
	Identify     string // no keys; replies INFO server and INFO memory
	ForceRelease string // KEYS lock, tombstone; ARGV token, fence, retention, tombstone (0: none), channel ("": none)
}

// Scripts returns the Lua sources of the Redis node.
func Scripts() LuaScripts { return src }

// MaxSkewMicros is node.MaxSeedSkew as the scripts take it.
var MaxSkewMicros = strconv.FormatInt(node.MaxSeedSkew.Microseconds(), 10)

// ScanSource is the Lua of SCAN, for a client that cannot send the command
// itself (no KEYS; ARGV cursor, match, count).
func ScanSource() string { return scanLua }
