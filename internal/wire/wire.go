// Package wire is what the nodes over Redis clients share: the key names
// beside a lock key, the format of its value, the Lua scripts and their
// arguments, and readers of their replies. The go-redis node
// (node/redisnode) and the rueidis node (module rueidisnode) both use it,
// so that a lock taken through one is seen by the other; the memory node
// uses the key names and values it mirrors.
package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// CounterKey is the name of the fence counter of the lock key name.
func CounterKey(name string) string { return name + ":fence" }

// TrailKey is the name of the trail of the lock key name: "fence token at
// owner" of its last acquisition that was not released, kept as long as
// the counter.
func TrailKey(name string) string { return name + ":holder" }

// IsCompanion reports whether a key name is a counter, tombstone or trail
// of a lock, a key of a read-write lock (lock names end in '}', their
// companions after it), a node's record or its stored id.
func IsCompanion(name string) bool {
	return strings.HasSuffix(name, "}:fence") || strings.HasSuffix(name, "}:holder") ||
		strings.HasPrefix(name, recordPrefix) ||
		strings.Contains(name, "}:gone:") ||
		strings.Contains(name, "}:rw:")
}

// LockValue is what a lock key holds: "token at owner", at in microseconds
// since the Unix epoch (0 when unknown).
func LockValue(token string, at time.Time, owner string) string {
	return token + " " + Micros(at) + " " + owner
}

// Micros formats t for the scripts: µs since the Unix epoch, "0" when t is
// zero.
func Micros(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

// WaitedMark starts the value of a lock key that a waiter of an older
// client marked, to have its release announced. Clients no longer write it
// (every release is announced); values that carry it are still read.
const WaitedMark = "!"

// ParseLockValue reads a lock key's value into h (token, acquisition time,
// owner). A bare token has no time or owner.
func ParseLockValue(v string) (h node.Holding) {
	v = strings.TrimPrefix(v, WaitedMark)
	h.Token, v, _ = strings.Cut(v, " ")
	at, owner, _ := strings.Cut(v, " ")
	if us, err := strconv.ParseInt(at, 10, 64); err == nil && us > 0 {
		h.AcquiredAt = time.UnixMicro(us)
	}
	h.Owner = owner
	return h
}

// ParseTrail reads a trail ("fence token at owner"); ok is false for a
// malformed one.
func ParseTrail(v string) (h node.Holding, ok bool) {
	if v == "" { // the common case: no previous holder, and no error to allocate
		return node.Holding{}, false
	}
	f, rest, _ := strings.Cut(v, " ")
	fence, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		return node.Holding{}, false
	}
	h = ParseLockValue(rest)
	h.Fence = fence
	return h, h.Token != ""
}

// TombstoneKey is the name of the tombstone that refuses late requests of
// token on the lock key name.
func TombstoneKey(name, token string) string { return name + ":gone:" + token }

// LockKeys are the names of the keys a request of token on the lock key
// name may touch, in one allocation (they are built on every call): the
// lock, CounterKey, TombstoneKey and TrailKey.
type LockKeys struct {
	Lock, Counter, Tombstone, Trail string
}

// KeysOf returns the LockKeys of a request of token on the lock key name.
func KeysOf(name, token string) LockKeys {
	all := name + ":fence" + name + ":gone:" + token + name + ":holder"
	counter := len(name) + len(":fence")
	tomb := counter + len(name) + len(":gone:") + len(token)
	return LockKeys{Lock: name, Counter: all[:counter], Tombstone: all[counter:tomb], Trail: all[tomb:]}
}

// Invalid is an error wrapping node.ErrInvalidArgument.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{node.ErrInvalidArgument}, args...)...)
}

// Millis rounds d up to whole milliseconds (Redis's unit), so that a
// positive duration never becomes zero.
func Millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// RetentionOrDefault is r, or node.DefaultRetention when r is zero.
func RetentionOrDefault(r time.Duration) time.Duration {
	if r == 0 {
		return node.DefaultRetention
	}
	return r
}

// ValidateRaise checks the arguments of Node.RaiseFence as the Validate
// methods do those of the other calls (the checks of a force release's).
func ValidateRaise(name, token string, fence uint64, retention time.Duration) error {
	return node.ForceReleaseArgs{Name: name, Token: token, Fence: fence, Retention: retention}.Validate()
}

// ParseRelease splits an announcement of the release script, "<releaseID>
// <name>" with a 16-digit id, into name and id. Anything else is taken as a
// bare name with no id.
func ParseRelease(payload string) (name, releaseID string) {
	if len(payload) > 17 && payload[16] == ' ' {
		return payload[17:], payload[:16]
	}
	return payload, ""
}
