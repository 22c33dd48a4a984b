package node

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidArgument is returned (wrapped) by every Node for arguments it
// cannot carry out: an empty name or token, a token with a space (the
// separator of a lock key's value) or starting with "!" (an older client's waiter mark), a TTL under a millisecond (Redis counts
// in milliseconds), a negative retention, a fence above MaxInt64, an owner
// CheckOwner refuses, a negative scan count.
var ErrInvalidArgument = errors.New("node: invalid argument")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

func checkNameToken(name, token string) error {
	if name == "" {
		return invalid("empty name")
	}
	if token == "" {
		return invalid("empty token for %q", name)
	}
	if strings.Contains(token, " ") {
		return invalid("token for %q has a space", name)
	}
	if strings.HasPrefix(token, waitedMark) {
		return invalid("token for %q starts with %q", name, waitedMark)
	}
	return nil
}

// MaxOwnerLen is the longest owner a lock records, in bytes.
const MaxOwnerLen = 256

// CheckOwner reports ErrInvalidArgument for an owner longer than
// MaxOwnerLen, not valid UTF-8, or with control characters (a newline
// would forge lines in listings). The empty owner is allowed.
func CheckOwner(owner string) error {
	switch {
	case len(owner) > MaxOwnerLen:
		return invalid("owner of %d bytes is longer than %d", len(owner), MaxOwnerLen)
	case !utf8.ValidString(owner):
		return invalid("owner %q is not valid UTF-8", owner)
	case strings.ContainsFunc(owner, unicode.IsControl):
		return invalid("owner %q has a control character", owner)
	}
	return nil
}

func checkTTL(name string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalid("ttl %s of %q is under a millisecond", ttl, name)
	}
	return nil
}

func checkFence(name string, fence uint64, retention time.Duration) error {
	if fence > math.MaxInt64 { // a Redis counter is a signed 64-bit integer
		return invalid("fence %d of %q is above MaxInt64", fence, name)
	}
	if retention < 0 {
		return invalid("negative retention %s of %q", retention, name)
	}
	return nil
}

// Validate reports ErrInvalidArgument for arguments no node can carry out.
func (a AcquireArgs) Validate() error {
	if err := checkNameToken(a.Name, a.Token); err != nil {
		return err
	}
	if err := checkTTL(a.Name, a.TTL); err != nil {
		return err
	}
	if err := CheckOwner(a.Owner); err != nil {
		return err
	}
	if a.Recovery < 0 || a.Hold < 0 {
		return invalid("negative recovery period %s or hold %s of %q", a.Recovery, a.Hold, a.Name)
	}
	if err := checkFrom(a.Name, a.Token, a.From); err != nil {
		return err
	}
	return checkFence(a.Name, 0, a.Retention)
}

// Validate reports ErrInvalidArgument for arguments no node can carry out.
func (a ExtendArgs) Validate() error {
	if err := checkNameToken(a.Name, a.Token); err != nil {
		return err
	}
	if err := checkTTL(a.Name, a.TTL); err != nil {
		return err
	}
	if err := CheckOwner(a.Owner); err != nil {
		return err
	}
	return checkFence(a.Name, a.Fence, a.Retention)
}

// Validate reports ErrInvalidArgument for arguments no node can carry out.
// A Tombstone of zero or less leaves no tombstone.
func (a ReleaseArgs) Validate() error {
	if err := checkNameToken(a.Name, a.Token); err != nil {
		return err
	}
	if a.From == "" {
		return nil
	}
	for _, from := range strings.Split(a.From, " ") {
		if from == "" {
			return invalid("an empty token among the hand-over tokens %q of %q", a.From, a.Name)
		}
		if err := checkFrom(a.Name, a.Token, from); err != nil {
			return err
		}
	}
	return nil
}

// checkFrom checks the token a key is handed over from: none, or a valid
// token other than the one it is handed to.
func checkFrom(name, token, from string) error {
	if from == "" {
		return nil
	}
	if from == token {
		return invalid("key %q handed over from its own token", name)
	}
	return checkNameToken(name, from)
}

// Validate reports ErrInvalidArgument for arguments no node can carry out.
func (a ForceReleaseArgs) Validate() error {
	if err := checkNameToken(a.Name, a.Token); err != nil {
		return err
	}
	return checkFence(a.Name, a.Fence, a.Retention)
}

// Validate reports ErrInvalidArgument for a negative Count.
func (a ScanArgs) Validate() error {
	if a.Count < 0 {
		return invalid("negative scan count %d", a.Count)
	}
	return nil
}

// CountOrDefault is a.Count, or DefaultScanCount when it is zero.
func (a ScanArgs) CountOrDefault() int {
	if a.Count == 0 {
		return DefaultScanCount
	}
	return a.Count
}

// waitedMark starts the value of a lock key that a waiter of an older
// client marked (see the package comment), so no token may start with it.
const waitedMark = "!"
