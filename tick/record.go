package tick

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/redlock"
)

// KeyPrefix starts the lock keys of every tick claim: the claim lock is
// KeyPrefix+job+"@"+tick, its records the same with "#claimed" and "#done"
// after it.
const KeyPrefix = "tick:"

const (
	claimedSuffix = "#claimed"
	doneSuffix    = "#done"
)

func claimKey(job, tick string) string { return KeyPrefix + job + "@" + tick }

// Record is what the nodes say about a tick's runner.
type Record struct {
	Runner   string    // the runner's owner (redlock.WithOwner)
	Fence    uint64    // the fence of the runner's claim
	Started  time.Time // when it claimed the tick, by its clock
	Finished time.Time // when it recorded its finish; zero if it did not
	Outcome  string    // "ok", "panic: ...", or the job's error; "" if not finished
}

// OutcomeOK is the Outcome of a job that returned nil.
const OutcomeOK = "ok"

// wire is a record as an owner string on the nodes.
type wire struct {
	Runner  string `json:"r"`
	Fence   uint64 `json:"f"`
	Started int64  `json:"s,omitempty"` // µs since the Unix epoch
	Outcome string `json:"o,omitempty"`
}

// encode fits a record into an owner (node.MaxOwnerLen bytes): the
// outcome is cut first, then the runner.
func encode(r Record) string {
	w := wire{Runner: r.Runner, Fence: r.Fence, Outcome: r.Outcome}
	if !r.Started.IsZero() {
		w.Started = r.Started.UnixMicro()
	}
	for {
		b, _ := json.Marshal(w)
		if len(b) <= node.MaxOwnerLen {
			return string(b)
		}
		cut := len(b) - node.MaxOwnerLen + 3
		switch {
		case len(w.Outcome) > cut+4:
			w.Outcome = strings.ToValidUTF8(w.Outcome[:len(w.Outcome)-cut-4], "") + "..."
		case w.Outcome != "":
			w.Outcome = "..."
		case len(w.Runner) > cut:
			w.Runner = strings.ToValidUTF8(w.Runner[:len(w.Runner)-cut], "")
		default:
			w.Runner = ""
		}
	}
}

// decode reads a record from a node's Info of a record key. A key that
// another program wrote keeps its owner as the runner.
func decode(ni redlock.Info) Record {
	var w wire
	if err := json.Unmarshal([]byte(ni.Owner), &w); err != nil {
		return Record{Runner: ni.Owner, Started: ni.AcquiredAt}
	}
	r := Record{Runner: w.Runner, Fence: w.Fence, Outcome: w.Outcome}
	if w.Started != 0 {
		r.Started = time.UnixMicro(w.Started)
	}
	return r
}

// seen returns the Info of a node that answered and holds the key. A record
// is written on a majority and read from a majority, so it is present when
// any answering node has it, even where it is no majority's.
func seen(info redlock.Info) (redlock.Info, bool) {
	for _, ni := range info.Nodes {
		if ni.Err == nil && ni.Held {
			return ni, true
		}
	}
	return redlock.Info{}, false
}

// records are what the nodes hold of one tick.
type records struct {
	claimed, done *Record
}

func readRecords(ctx context.Context, c *redlock.Client, claim string) (records, error) {
	var rs records
	info, err := c.Inspect(ctx, claim+claimedSuffix)
	if err != nil {
		return rs, err
	}
	if ni, ok := seen(info); ok {
		r := decode(ni)
		r.Started = ni.AcquiredAt
		rs.claimed = &r
	}
	if info, err = c.Inspect(ctx, claim+doneSuffix); err != nil {
		return rs, err
	}
	if ni, ok := seen(info); ok {
		r := decode(ni)
		r.Finished = ni.AcquiredAt
		rs.done = &r
	}
	return rs, nil
}

// runningRecord is what the claim lock says of the replica holding it.
func runningRecord(ctx context.Context, c *redlock.Client, claim string) (*Record, error) {
	info, err := c.Inspect(ctx, claim)
	if err != nil {
		return nil, err
	}
	ni, ok := seen(info)
	if !ok {
		return nil, nil
	}
	return &Record{Runner: ni.Owner, Fence: ni.Fence, Started: ni.AcquiredAt}, nil
}

// write records r under key for the retention: a lock acquired on a
// majority and then released with redlock.Lock.HoldAtLeast, so that its
// key stays until it expires by itself and nothing in this process waits
// for it.
func write(ctx context.Context, c *redlock.Client, key string, r Record, cfg config) error {
	// The claim's TTL is one the client accepts; the release sets the
	// retention (a little longer if the client's node timeout needs it).
	l, err := c.TryAcquire(redlock.ContextWithOwner(ctx, encode(r)), key, cfg.claimTTL)
	if err == nil {
		l.HoldAtLeast(cfg.retention)
		err = l.Release(ctx)
	}
	if err != nil {
		return fmt.Errorf("tick: record %q: %w", key, err)
	}
	return nil
}
