package redisnode

import (
	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/wire"
)

// The scripts of the Redis node, the sources of package wire, loaded by
// go-redis under the SHA-1 of their text.
var (
	acquireScript      = redis.NewScript(wire.Scripts().Acquire)
	learnScript        = redis.NewScript(wire.Scripts().Learn)
	extendScript       = redis.NewScript(wire.Scripts().Extend)
	releaseScript      = redis.NewScript(wire.Scripts().Release)
	raiseScript        = redis.NewScript(wire.Scripts().RaiseFence)
	inspectScript      = redis.NewScript(wire.Scripts().Inspect)
	identifyScript     = redis.NewScript(wire.Scripts().Identify)
	forceReleaseScript = redis.NewScript(wire.Scripts().ForceRelease)
	scanScript         = redis.NewScript(wire.ScanSource()) // only a Redis node over a bare Scripter needs it
)

var (
	rwAcquireScript = redis.NewScript(wire.RWScripts().Acquire)
	rwExtendScript  = redis.NewScript(wire.RWScripts().Extend)
	rwReleaseScript = redis.NewScript(wire.RWScripts().Release)
	rwRaiseScript   = redis.NewScript(wire.RWScripts().RaiseFence)
)
