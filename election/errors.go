package election

import (
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/redlock"
)

// ErrNoLeader means that no participant holds the election on a majority of the
// nodes (Leader). It is not a failure of the nodes: they answered.
var ErrNoLeader = errors.New("election: no leader")

// Other errors wrap redlock's sentinels: redlock.ErrInvalidArgument for bad
// input, redlock.ErrQuorumUnreachable when too many nodes failed,
// redlock.ErrLockLost for a term that ended, or the caller's ctx.Err().

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: election: "+format, append([]any{redlock.ErrInvalidArgument}, args...)...)
}
