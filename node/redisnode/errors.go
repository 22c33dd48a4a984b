package redisnode

import (
	"errors"

	"github.com/quorumlock/quorumlock/internal/nodelist"
)

// Errors of Dial, DialFile and DialEnv; check them with errors.Is. The
// message says which node, without its password.
var (
	// ErrNoNodes: the list, the file or REDLOCK_NODES names no node (or
	// REDLOCK_NODES is not set).
	ErrNoNodes = errors.New("redisnode: no nodes")
	// ErrBadAddress: a node is neither host:port nor a valid redis:// or
	// rediss:// URL, or is listed twice.
	ErrBadAddress = errors.New("redisnode: bad node address")
	// ErrSingleNode: the list names one node, which gives no quorum (the
	// lock fails with it); pass AllowSingleNode to accept it.
	ErrSingleNode = errors.New("redisnode: one node is no quorum")
)

// dialError is a nodelist error wrapping this package's sentinel of the
// same kind instead of nodelist's.
type dialError struct {
	kind error
	msg  string
}

func (e *dialError) Error() string { return "redisnode: " + e.msg }
func (e *dialError) Unwrap() error { return e.kind }

// exported maps an error of package nodelist to this package's sentinels.
func exported(err error) error {
	var ne *nodelist.Error
	if !errors.As(err, &ne) {
		return err
	}
	switch ne.Kind {
	case nodelist.ErrNoNodes:
		return &dialError{ErrNoNodes, ne.Msg}
	case nodelist.ErrBadAddress:
		return &dialError{ErrBadAddress, ne.Msg}
	}
	return err
}
