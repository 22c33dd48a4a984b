package rwlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// modeNode presents one side (mode) of a node's read-write locks as a
// node.Node, so that the quorum client of package redlock runs its one
// quorum round, fence settle, extension, watchdog and loss signal on them
// unchanged: Acquire, Extend, Release and RaiseFence go to the
// ReadWriter's calls in the mode. The calls a read-write client never
// makes (Inspect, Scan, ForceRelease) fail.
type modeNode struct {
	node.Node
	rw   node.ReadWriter
	mode node.Mode
}

// errNotForRW is the error of the calls a read-write client never makes.
var errNotForRW = fmt.Errorf("rwlock: %w on a read-write lock", errors.ErrUnsupported)

func (n modeNode) Acquire(ctx context.Context, a node.AcquireArgs) (node.AcquireReply, error) {
	return n.rw.AcquireRW(ctx, n.mode, a)
}

func (n modeNode) Extend(ctx context.Context, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	return n.rw.ExtendRW(ctx, n.mode, ops)
}

func (n modeNode) Release(ctx context.Context, a node.ReleaseArgs) (bool, error) {
	return n.rw.ReleaseRW(ctx, n.mode, a)
}

func (n modeNode) RaiseFence(ctx context.Context, name, token string, fence uint64, retention time.Duration) (bool, error) {
	return n.rw.RaiseFenceRW(ctx, n.mode, name, token, fence, retention)
}

func (n modeNode) Inspect(context.Context, string) (node.Holding, error) {
	return node.Holding{}, errNotForRW
}

func (n modeNode) Scan(context.Context, node.ScanArgs) (node.ScanPage, error) {
	return node.ScanPage{}, errNotForRW
}

func (n modeNode) ForceRelease(context.Context, node.ForceReleaseArgs) (bool, error) {
	return false, errNotForRW
}
