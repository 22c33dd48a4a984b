package redisnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/internal/wire"
	"github.com/quorumlock/quorumlock/node"
)

var _ node.ReadWriter = (*Node)(nil)

// rwAcquireReplyOf reads the reply of the read-write acquire script.
func rwAcquireReplyOf(vals []any) (node.AcquireReply, error) {
	if len(vals) != 2 && len(vals) != 3 {
		return node.AcquireReply{}, fmt.Errorf("node: unexpected rw acquire reply %v", vals)
	}
	ok, err1 := replyInt(vals[0])
	v, err2 := replyInt(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return node.AcquireReply{}, fmt.Errorf("node: rw acquire reply %v: %w", vals, err)
	}
	var holder string
	if len(vals) == 3 {
		holder, _ = vals[2].(string)
	}
	return wire.AcquireReplyOf(ok == 1, v, holder), nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// AcquireRW implements ReadWriter.
func (n *Node) AcquireRW(ctx context.Context, mode node.Mode, a node.AcquireArgs) (node.AcquireReply, error) {
	keys, args, err := wire.RWAcquireCall(mode, a)
	if err != nil {
		return node.AcquireReply{}, err
	}
	vals, err := rwAcquireScript.Run(ctx, n.client, keys, toAny(args)...).Slice()
	if err != nil {
		return node.AcquireReply{}, err
	}
	return rwAcquireReplyOf(vals)
}

// ExtendRW implements ReadWriter: one script call per op (not pipelined).
func (n *Node) ExtendRW(ctx context.Context, mode node.Mode, ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	calls := make([][2][]string, len(ops))
	for i, op := range ops {
		keys, args, err := wire.RWExtendCall(mode, op)
		if err != nil {
			return nil, err
		}
		calls[i] = [2][]string{keys, args}
	}
	res := make([]node.ExtendResult, len(ops))
	for i, c := range calls {
		v, err := rwExtendScript.Run(ctx, n.client, c[0], toAny(c[1])...).Int64()
		if res[i], err = extendResult(v, err); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ReleaseRW implements ReadWriter.
func (n *Node) ReleaseRW(ctx context.Context, mode node.Mode, a node.ReleaseArgs) (bool, error) {
	keys, args, err := wire.RWReleaseCall(mode, a)
	if err != nil {
		return false, err
	}
	v, err := rwReleaseScript.Run(ctx, n.client, keys, toAny(args)...).Int64()
	return err == nil && v == 1, err
}

// RaiseFenceRW implements ReadWriter.
func (n *Node) RaiseFenceRW(ctx context.Context, mode node.Mode, name, token string, fence uint64, retention time.Duration) (bool, error) {
	keys, args, err := wire.RWRaiseCall(mode, name, token, fence, retention)
	if err != nil {
		return false, err
	}
	v, err := rwRaiseScript.Run(ctx, n.client, keys, toAny(args)...).Int64()
	return err == nil && v == 1, err
}
