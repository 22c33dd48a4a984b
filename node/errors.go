package node

import (
	"errors"

	"github.com/quorumlock/quorumlock/internal/respguard"
)

// ErrDown is memnode.ErrDown, under its old name. The contract between the
// client and a server has no "down": a server that cannot answer returns
// its own error.
//
// Deprecated: use memnode.ErrDown, the same error.
var ErrDown = errors.New("node: memory node is down")

// ErrReplyTooLong means that a node's reply announced more than the limits of
// redisnode.BoundConn (or a malformed length, or a RESP3 form Redis does not send to
// a lock client); the connection was closed before the client allocated
// it.
var ErrReplyTooLong = respguard.ErrTooLong
