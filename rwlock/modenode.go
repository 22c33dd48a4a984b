package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// modeNode presents one side (mode) of a node's read-write locks as a
// node.Node, so that the quorum client of package redlock runs its one
// quorum round, fence settle, extension, watchdog and loss signal on them
// unchanged: Acquire, Extend, Release and RaiseFence go to the
// ReadWriter's calls in the mode. It has none of the administrative
// capabilities (a read-write client never inspects or force-releases), and
// forwards Subscribe, since the read-write scripts announce releases on the
// same channel.
type modeNode struct {
	node.Node
	rw   node.ReadWriter
	mode node.Mode
}

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

// Subscribe forwards to the node's release announcements.
func (n modeNode) Subscribe(ctx context.Context, channel string, onRelease func(name, releaseID string), onState func(up bool, err error)) (func(), error) {
	sub, ok := n.Node.(node.Subscriber)
	if !ok {
		return nil, fmt.Errorf("rwlock: node %s: %w", n.Name(), node.ErrNotificationsUnsupported)
	}
	return sub.Subscribe(ctx, channel, onRelease, onState)
}
