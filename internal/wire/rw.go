package wire

import (
	"errors"
	"strconv"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// ModeArg is the mode as the rw scripts take it.
func ModeArg(m node.Mode) string {
	if m == node.Shared {
		return "s"
	}
	return "x"
}

// RWWriterKey is the writer of the read-write lock name.
func RWWriterKey(name string) string { return name + ":rw:w" }

// RWReadersKey is the readers of the read-write lock name.
func RWReadersKey(name string) string { return name + ":rw:r" }

// RWIntentKey is the waiting writer's intent of the read-write lock name.
func RWIntentKey(name string) string { return name + ":rw:i" }

// RWAcquireCall is the KEYS and ARGV of the read-write acquire script
// (RWScripts().Acquire), after validation, for nodes over other clients.
func RWAcquireCall(mode node.Mode, a node.AcquireArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), a.Validate()); err != nil {
		return nil, nil, err
	}
	return rwKeys(a.Name, a.Token), []string{ModeArg(mode), a.Token, ms(a.TTL), strconv.FormatUint(a.Seed, 10),
		ms(RetentionOrDefault(a.Retention)), MaxSkewMicros, Micros(a.At), a.Owner}, nil
}

// RWExtendCall is the KEYS and ARGV of the read-write extend script for
// one op.
func RWExtendCall(mode node.Mode, op node.ExtendArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), op.Validate()); err != nil {
		return nil, nil, err
	}
	return rwKeys(op.Name, op.Token), []string{ModeArg(mode), op.Token, ms(op.TTL), strconv.FormatUint(op.Fence, 10),
		ms(RetentionOrDefault(op.Retention)), Micros(op.At), op.Owner}, nil
}

// RWReleaseCall is the KEYS and ARGV of the read-write release script.
func RWReleaseCall(mode node.Mode, a node.ReleaseArgs) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), a.Validate()); err != nil {
		return nil, nil, err
	}
	var tomb time.Duration
	if a.Tombstone > 0 {
		tomb = a.Tombstone
	}
	return []string{RWWriterKey(a.Name), RWReadersKey(a.Name), RWIntentKey(a.Name), TombstoneKey(a.Name, a.Token)},
		[]string{ModeArg(mode), a.Token, ms(tomb), a.Channel, a.Name}, nil
}

// RWRaiseCall is the KEYS and ARGV of the read-write fence raise script.
func RWRaiseCall(mode node.Mode, name, token string, fence uint64, retention time.Duration) (keys, args []string, err error) {
	if err := errors.Join(mode.Validate(), ValidateRaise(name, token, fence, retention)); err != nil {
		return nil, nil, err
	}
	return []string{RWWriterKey(name), RWReadersKey(name), CounterKey(name)},
		[]string{ModeArg(mode), token, strconv.FormatUint(fence, 10), ms(RetentionOrDefault(retention))}, nil
}

func rwKeys(name, token string) []string {
	return []string{RWWriterKey(name), RWReadersKey(name), RWIntentKey(name), CounterKey(name), TombstoneKey(name, token)}
}

func ms(d time.Duration) string { return strconv.FormatInt(Millis(d), 10) }
