package wire

import (
	_ "embed"
)

// The Lua of the read-write lock (see ReadWriter), one file per call, each
// starting with lua/value.lua and lua/rw_common.lua.
var (
	//go:embed lua/rw_common.lua
	rwCommonLua string
	//go:embed lua/rw_acquire.lua
	rwAcquireLua string
	//go:embed lua/rw_extend.lua
	rwExtendLua string
	//go:embed lua/rw_release.lua
	rwReleaseLua string
	//go:embed lua/rw_raise.lua
	rwRaiseLua string
)

var rwSrc = RWLuaScripts{
	Acquire:    valueLua + rwCommonLua + rwAcquireLua,
	Extend:     valueLua + rwCommonLua + rwExtendLua,
	Release:    valueLua + rwCommonLua + rwReleaseLua,
	RaiseFence: valueLua + rwCommonLua + rwRaiseLua,
}

// RWLuaScripts are the sources of the read-write scripts, for nodes over
// other Redis clients (rueidisnode). Use RWKeys and RWArgs to call them.
type RWLuaScripts struct {
	Acquire, Extend, Release, RaiseFence string
}

// RWScripts returns the Lua sources of the read-write lock.
func RWScripts() RWLuaScripts { return rwSrc }
