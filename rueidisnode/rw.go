package rueidisnode

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

// The read-write scripts of redisnode.Node, verbatim, with the same KEYS and
// ARGV (wire.RWAcquireCall and its siblings build them).
var (
	rwSrc        = wire.RWScripts()
	rwAcquireLua = rueidis.NewLuaScript(rwSrc.Acquire)
	rwExtendLua  = rueidis.NewLuaScript(rwSrc.Extend)
	rwReleaseLua = rueidis.NewLuaScript(rwSrc.Release)
	rwRaiseLua   = rueidis.NewLuaScript(rwSrc.RaiseFence)
)

var _ node.ReadWriter = (*Node)(nil)

// AcquireRW implements node.ReadWriter.
func (n *Node) AcquireRW(ctx context.Context, mode node.Mode, a node.AcquireArgs) (node.AcquireReply, error) {
	keys, args, err := wire.RWAcquireCall(mode, a)
	if err != nil {
		return node.AcquireReply{}, err
	}
	vals, err := rwAcquireLua.Exec(ctx, n.client, keys, args).ToArray()
	if err != nil {
		return node.AcquireReply{}, err
	}
	if len(vals) != 2 && len(vals) != 3 {
		return node.AcquireReply{}, fmt.Errorf("rueidisnode: unexpected rw acquire reply of %d values", len(vals))
	}
	ok, err := vals[0].AsInt64()
	if err != nil {
		return node.AcquireReply{}, err
	}
	v, err := vals[1].AsInt64()
	if err != nil {
		return node.AcquireReply{}, err
	}
	var holder string
	if len(vals) == 3 {
		holder, _ = vals[2].ToString()
	}
	return wire.AcquireReplyOf(ok == 1, v, holder), nil
}

// ExtendRW implements node.ReadWriter: one script call per op.
func (n *Node) ExtendRW(ctx context.Context, mode node.Mode, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	type call struct{ keys, args []string }
	calls := make([]call, len(ops))
	for i, op := range ops {
		keys, args, err := wire.RWExtendCall(mode, op)
		if err != nil {
			return nil, err
		}
		calls[i] = call{keys, args}
	}
	res := make([]node.ExtendResult, len(ops))
	for i, c := range calls {
		v, err := rwExtendLua.Exec(ctx, n.client, c.keys, c.args).AsInt64()
		if err != nil {
			return nil, err
		}
		if v < int64(node.NotHeld) || v > int64(node.Reasserted) {
			return nil, fmt.Errorf("rueidisnode: unexpected rw extend reply %d", v)
		}
		res[i] = node.ExtendResult(v)
	}
	return res, nil
}

// ReleaseRW implements node.ReadWriter.
func (n *Node) ReleaseRW(ctx context.Context, mode node.Mode, a node.ReleaseArgs) (bool, error) {
	keys, args, err := wire.RWReleaseCall(mode, a)
	if err != nil {
		return false, err
	}
	v, err := rwReleaseLua.Exec(ctx, n.client, keys, args).AsInt64()
	return err == nil && v == 1, err
}

// RaiseFenceRW implements node.ReadWriter.
func (n *Node) RaiseFenceRW(ctx context.Context, mode node.Mode, name, token string, fence uint64, retention time.Duration) (bool, error) {
	keys, args, err := wire.RWRaiseCall(mode, name, token, fence, retention)
	if err != nil {
		return false, err
	}
	v, err := rwRaiseLua.Exec(ctx, n.client, keys, args).AsInt64()
	return err == nil && v == 1, err
}
