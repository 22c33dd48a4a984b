package tick

import (
	"fmt"
	"strings"

	"github.com/quorumlock/quorumlock/redlock"
)

// Describe says in words what a lock key of a tick claim is, for listings
// (redlock ls, inspect): key is the key without the client's prefix, owner
// the owner the nodes report. ok is false for keys that are not a tick's.
func Describe(key, owner string) (desc string, ok bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return "", false
	}
	job, tickName, ok := strings.Cut(rest, "@")
	if !ok || checkName(job) != nil {
		return "", false
	}
	state := "claim (running)"
	switch {
	case strings.HasSuffix(tickName, claimedSuffix):
		tickName, state = strings.TrimSuffix(tickName, claimedSuffix), "claimed"
	case strings.HasSuffix(tickName, doneSuffix):
		tickName, state = strings.TrimSuffix(tickName, doneSuffix), "done"
	}
	if checkName(tickName) != nil {
		return "", false
	}
	if state == "claim (running)" {
		return fmt.Sprintf("job %s tick %s: claim, run by %s", job, tickName, owner), true
	}
	r := decode(redlock.Info{Owner: owner})
	desc = fmt.Sprintf("job %s tick %s: %s by %s, fence %d", job, tickName, state, r.Runner, r.Fence)
	if state == "done" {
		desc += ", outcome " + r.Outcome
	}
	return desc, true
}
