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

// CounterKey is the name of the fence counter of a read-write lock on the
// lock key name (a mutex keeps its fence in its record: see lua/value.lua).
func CounterKey(name string) string { return name + ":fence" }

// TrailKey is the name of the trail that clients before 0.5 kept beside a
// lock key; it is only listed among companions.
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

// WaitedMark starts the holder's token in a lock key's record once a
// waiter found the key held, so that its release is announced (see
// lua/value.lua); an older client's value may start with it too.
const WaitedMark = "!"

// ParseRecord reads a lock key's record (see lua/value.lua): the token that
// holds or last held it (empty once released) with its acquisition time,
// owner and fence, the key's count, and until, the server's time (ms) its
// hold ends (in the past: expired; 0: evicted). ok is false for a value
// that is not a record (an older client's "token at owner").
func ParseRecord(v string) (h node.Holding, count uint64, until int64, ok bool) {
	f := strings.SplitN(v, " ", 6)
	c, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return node.Holding{}, 0, 0, false
	}
	if len(f) == 1 {
		return node.Holding{}, c, 0, true
	}
	if len(f) < 5 {
		return node.Holding{}, 0, 0, false
	}
	fence, err1 := strconv.ParseUint(f[1], 10, 64)
	til, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return node.Holding{}, 0, 0, false
	}
	h = ParseLockValue(strings.Join(f[3:], " "))
	h.Fence = fence
	return h, c, til, true
}

// ParseLockValue reads a lock key's value into h (token, acquisition time,
// owner): "token at owner" (a bare token has no time or owner), or a
// record (see ParseRecord), whose holder it reads whether or not its hold
// has ended.
func ParseLockValue(v string) (h node.Holding) {
	if v != "" && v[0] >= '0' && v[0] <= '9' && (strings.Count(v, " ") >= 4 || !strings.Contains(v, " ")) {
		if r, _, _, ok := ParseRecord(v); ok {
			return r // a released record ("count") holds nothing
		}
	}
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
// lock (its record) and TombstoneKey.
type LockKeys struct {
	Lock, Tombstone string
}

// KeysOf returns the LockKeys of a request of token on the lock key name.
func KeysOf(name, token string) LockKeys {
	return LockKeys{Lock: name, Tombstone: TombstoneKey(name, token)}
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
