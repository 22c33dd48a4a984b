package tick

import (
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/redlock"
)

// Key is what one lock key of a tick is, read back for listings (redlock
// ls, inspect, tick reset): a tick has up to three keys, its claim lock
// ("tick:JOB@TICK") and two records ("#claimed", "#done").
type Key struct {
	Job, Tick string
	Kind      string // "claim", "claimed" or "done"
	Record    Record // the runner as the key's owner says; for a claim, Runner only
}

// ParseKey reads a lock key of a tick: key is the key without the
// client's prefix, owner the owner the nodes report. ok is false for keys
// that are not a tick's.
func ParseKey(key, owner string) (k Key, ok bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return Key{}, false
	}
	job, tickName, ok := strings.Cut(rest, "@")
	if !ok || checkName(job) != nil {
		return Key{}, false
	}
	k = Key{Job: job, Kind: "claim", Record: Record{Runner: owner}}
	switch {
	case strings.HasSuffix(tickName, claimedSuffix):
		tickName, k.Kind = strings.TrimSuffix(tickName, claimedSuffix), "claimed"
	case strings.HasSuffix(tickName, doneSuffix):
		tickName, k.Kind = strings.TrimSuffix(tickName, doneSuffix), "done"
	}
	if checkName(tickName) != nil {
		return Key{}, false
	}
	k.Tick = tickName
	if k.Kind != "claim" {
		k.Record = decode(redlock.Info{Owner: owner})
	}
	return k, true
}

// Keys are the lock keys of one tick of job, without the client's prefix:
// the claim, then its "claimed" and "done" records.
func Keys(job, tickName string) []string {
	c := claimKey(job, tickName)
	return []string{c, c + claimedSuffix, c + doneSuffix}
}

// Describe says in words what a lock key of a tick claim is, for listings
// (redlock ls, inspect): key is the key without the client's prefix, owner
// the owner the nodes report. ok is false for keys that are not a tick's.
func Describe(key, owner string) (desc string, ok bool) {
	k, ok := ParseKey(key, owner)
	if !ok {
		return "", false
	}
	if k.Kind == "claim" {
		return fmt.Sprintf("job %s tick %s: claim, run by %s", k.Job, k.Tick, owner), true
	}
	desc = fmt.Sprintf("job %s tick %s: %s by %s, fence %d", k.Job, k.Tick, k.Kind, k.Record.Runner, k.Record.Fence)
	if k.Kind == "done" {
		desc += ", outcome " + k.Record.Outcome
	}
	return desc, true
}
