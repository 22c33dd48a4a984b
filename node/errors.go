package node

import (
	"errors"

	"github.com/quorumlock/quorumlock/internal/respguard"
)

// ErrDown is returned by every call to a memory node (package memnode) stopped with its SetDown,
// standing in for an unreachable server.
var ErrDown = errors.New("node: memory node is down")

// ErrReplyTooLong means that a node's reply announced more than the limits of
// redisnode.BoundConn (or a malformed length, or a RESP3 form Redis does not send to
// a lock client); the connection was closed before the client allocated
// it.
var ErrReplyTooLong = respguard.ErrTooLong
