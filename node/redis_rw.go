package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

var _ ReadWriter = (*Redis)(nil)

// RWAcquireCall is the KEYS and ARGV of the read-write acquire script
// (RWScripts().Acquire), after validation, for nodes over other clients.
func RWAcquireCall(mode Mode, a AcquireArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), a.Validate()); err != nil {
		return nil, nil, err
	}
	return rwKeys(a.Name, a.Token), []string{mode.arg(), a.Token, ms(a.TTL), strconv.FormatUint(a.Seed, 10),
		ms(RetentionOrDefault(a.Retention)), maxSkewMicros.(string), micros(a.At), a.Owner}, nil
}

// RWExtendCall is the KEYS and ARGV of the read-write extend script for
// one op.
func RWExtendCall(mode Mode, op ExtendArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), op.Validate()); err != nil {
		return nil, nil, err
	}
	return rwKeys(op.Name, op.Token), []string{mode.arg(), op.Token, ms(op.TTL), strconv.FormatUint(op.Fence, 10),
		ms(RetentionOrDefault(op.Retention)), micros(op.At), op.Owner}, nil
}

// RWReleaseCall is the KEYS and ARGV of the read-write release script.
func RWReleaseCall(mode Mode, a ReleaseArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), a.Validate()); err != nil {
		return nil, nil, err
	}
	var tomb time.Duration
	if a.Tombstone > 0 {
		tomb = a.Tombstone
	}
	return []string{rwWriterKey(a.Name), rwReadersKey(a.Name), rwIntentKey(a.Name), TombstoneKey(a.Name, a.Token)},
		[]string{mode.arg(), a.Token, ms(tomb), a.Channel, a.Name}, nil
}

// RWRaiseCall is the KEYS and ARGV of the read-write fence raise script.
func RWRaiseCall(mode Mode, name, token string, fence uint64, retention time.Duration) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), ValidateRaise(name, token, fence, retention)); err != nil {
		return nil, nil, err
	}
	return []string{rwWriterKey(name), rwReadersKey(name), CounterKey(name)},
		[]string{mode.arg(), token, strconv.FormatUint(fence, 10), ms(RetentionOrDefault(retention))}, nil
}

// rwAcquireReplyOf reads the reply of the read-write acquire script.
func rwAcquireReplyOf(vals []any) (AcquireReply, error) {
	if len(vals) != 2 && len(vals) != 3 {
		return AcquireReply{}, fmt.Errorf("node: unexpected rw acquire reply %v", vals)
	}
	ok, err1 := replyInt(vals[0])
	v, err2 := replyInt(vals[1])
	if err := errors.Join(err1, err2); err != nil {
		return AcquireReply{}, fmt.Errorf("node: rw acquire reply %v: %w", vals, err)
	}
	var holder string
	if len(vals) == 3 {
		holder, _ = vals[2].(string)
	}
	return AcquireReplyOf(ok == 1, v, holder), nil
}

func rwKeys(name, token string) []string {
	return []string{rwWriterKey(name), rwReadersKey(name), rwIntentKey(name), CounterKey(name), TombstoneKey(name, token)}
}

func ms(d time.Duration) string { return strconv.FormatInt(millis(d), 10) }

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// AcquireRW implements ReadWriter.
func (n *Redis) AcquireRW(ctx context.Context, mode Mode, a AcquireArgs) (AcquireReply, error) {
	keys, args, err := RWAcquireCall(mode, a)
	if err != nil {
		return AcquireReply{}, err
	}
	vals, err := rwAcquireScript.Run(ctx, n.client, keys, toAny(args)...).Slice()
	if err != nil {
		return AcquireReply{}, err
	}
	return rwAcquireReplyOf(vals)
}

// ExtendRW implements ReadWriter: one script call per op (not pipelined).
func (n *Redis) ExtendRW(ctx context.Context, mode Mode, ops []ExtendArgs) ([]ExtendResult, error) {
	calls := make([][2][]string, len(ops))
	for i, op := range ops {
		keys, args, err := RWExtendCall(mode, op)
		if err != nil {
			return nil, err
		}
		calls[i] = [2][]string{keys, args}
	}
	res := make([]ExtendResult, len(ops))
	for i, c := range calls {
		v, err := rwExtendScript.Run(ctx, n.client, c[0], toAny(c[1])...).Int64()
		if res[i], err = extendResult(v, err); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ReleaseRW implements ReadWriter.
func (n *Redis) ReleaseRW(ctx context.Context, mode Mode, a ReleaseArgs) (bool, error) {
	keys, args, err := RWReleaseCall(mode, a)
	if err != nil {
		return false, err
	}
	v, err := rwReleaseScript.Run(ctx, n.client, keys, toAny(args)...).Int64()
	return err == nil && v == 1, err
}

// RaiseFenceRW implements ReadWriter.
func (n *Redis) RaiseFenceRW(ctx context.Context, mode Mode, name, token string, fence uint64, retention time.Duration) (bool, error) {
	keys, args, err := RWRaiseCall(mode, name, token, fence, retention)
	if err != nil {
		return false, err
	}
	v, err := rwRaiseScript.Run(ctx, n.client, keys, toAny(args)...).Int64()
	return err == nil && v == 1, err
}
