package nodetest

import (
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// learner returns the node's node.Learner, skipping the check when it has
// none (a node that keeps no standing record counts as a voter).
func (f *fixture) learner() node.Learner {
	l, ok := f.n.(node.Learner)
	if !ok {
		if p, isPartial := f.n.(partialNode); isPartial {
			l, ok = p.Node.(node.Learner)
		}
	}
	if !ok {
		f.t.Skipf("%s: no node.Learner", f.n.Name())
	}
	return l
}

func (f *fixture) learn(a node.LearnArgs) node.Standing {
	f.t.Helper()
	s, err := f.learner().Learn(f.ctx(), a)
	f.must("learn", err)
	return s
}

// An acquire that passes a recovery period reports the node's standing
// (acquired, held by another, or refused by a tombstone alike); one that
// does not leaves it unknown. The nodes may share a server whose record
// earlier checks promoted, so a learning record is promoted here first.
func acquireReportsStanding(f *fixture) {
	name := f.name()
	s := f.learn(node.LearnArgs{Name: name, Recovery: time.Hour})
	if !s.Known {
		f.t.Fatalf("Learn = %+v: standing unknown", s)
	}
	if !s.Voting {
		if s = f.learn(node.LearnArgs{Name: name, Recovery: time.Hour, Promote: s.ID}); !s.Voting {
			f.t.Fatalf("promoting the learning record = %+v, want voting", s)
		}
	}
	asked := node.AcquireArgs{Name: name, Token: "a", TTL: long, Recovery: time.Hour}
	if r := f.acquireArgs(asked); !r.Acquired || r.Standing != (node.Standing{Known: true, Voting: true}) {
		f.t.Fatalf("acquire = %+v, want acquired, voting", r)
	}
	asked.Token = "b"
	if r := f.acquireArgs(asked); r.Acquired || !r.Standing.Voting {
		f.t.Fatalf("acquire of a held key = %+v, want refused, voting", r)
	}
	f.release(name, "a", long)
	asked.Token = "a"
	if r := f.acquireArgs(asked); r.Acquired || !r.Standing.Voting {
		f.t.Fatalf("acquire refused by a tombstone = %+v, want refused, voting", r)
	}
	if r := f.acquire(f.name(), "c", long); r.Standing.Known {
		f.t.Fatalf("acquire without a recovery period = %+v, want the standing unknown", r)
	}
	if h := f.inspect(name); h.Standing != (node.Standing{Known: true, Voting: true}) {
		f.t.Fatalf("inspect = %+v, want voting", h)
	}
}

// A learning record is promoted only by its own id; the id of another
// changes nothing. A record that has learned the period votes.
func learnPromotesOnlyItsRecord(f *fixture) {
	name := f.name()
	s := f.learn(node.LearnArgs{Name: name, Recovery: time.Hour})
	if s.Voting {
		f.t.Skip("the node's record votes already (the server is shared): nothing to promote")
	}
	if s.ID == "" || s.Scope == "" {
		f.t.Fatalf("a learning standing without id or scope: %+v", s)
	}
	if got := f.learn(node.LearnArgs{Name: name, Recovery: time.Hour, Promote: s.ID + "0"}); got.Voting || got.ID != s.ID {
		f.t.Fatalf("promote with another id = %+v, want still learning as %q", got, s.ID)
	}
	if h := f.inspect(name); h.Standing.Voting || h.Standing.ID != s.ID {
		f.t.Fatalf("inspect of a learning node = %+v", h.Standing)
	}
	time.Sleep(5 * time.Millisecond)
	if got := f.learn(node.LearnArgs{Name: name, Recovery: time.Millisecond}); !got.Voting {
		f.t.Fatalf("learn after the period = %+v, want voting", got)
	}
}

// A learning node told of a hold longer than the period sits out until it
// has learned the hold too, and keeps the longest hold it was told of
// once it votes, reporting it to a caller that does not know it. A step
// adds at most node.LearnStep, however slow the machine: two calls after
// the record was written have learned at most two seconds, under the
// hold; three more, each after a sleep of 750 ms, at least 2.25 s, past it.
func learnerSitsOutTheHold(f *fixture) {
	const hold = 2100 * time.Millisecond
	name := f.name()
	s := f.learn(node.LearnArgs{Name: name, Recovery: time.Millisecond, Hold: hold})
	if s.Voting {
		f.t.Skip("the node's record votes already (the server is shared): nothing learns")
	}
	if s.Hold != hold {
		f.t.Fatalf("a learner told a hold of %s reports %+v", hold, s)
	}
	if got := f.learn(node.LearnArgs{Name: name, Recovery: time.Millisecond}); got.Voting || got.Hold != hold {
		f.t.Fatalf("learn past the period, within the hold = %+v, want learning with the hold", got)
	}
	if r := f.acquireArgs(node.AcquireArgs{Name: name, Token: "a", TTL: long, Recovery: time.Millisecond}); !r.Acquired || r.Standing.Voting {
		f.t.Fatalf("acquire within the hold = %+v, want acquired, learning", r)
	}
	var got node.Standing
	for range 3 {
		time.Sleep(750 * time.Millisecond)
		got = f.learn(node.LearnArgs{Name: name, Recovery: time.Millisecond, Hold: hold / 2})
	}
	if !got.Voting || got.Hold != hold {
		f.t.Fatalf("learn after the hold = %+v, want voting with the longer hold", got)
	}
	if got := f.learn(node.LearnArgs{Name: name, Recovery: time.Millisecond, Hold: hold}); got != (node.Standing{Known: true, Voting: true}) {
		f.t.Fatalf("a voter asked by a caller that knows its hold = %+v, want voting, no hold", got)
	}
	if got := f.learn(node.LearnArgs{Name: name, Recovery: time.Hour}); got != (node.Standing{Known: true, Voting: true}) {
		f.t.Fatalf("a voter asked with a period longer than its hold = %+v, want voting, no hold", got)
	}
	if h := f.inspect(name); !h.Standing.Voting || h.Standing.Hold != hold {
		f.t.Fatalf("inspect = %+v, want voting with the hold", h.Standing)
	}
}

// Learn refuses arguments no node can carry out.
func learnInvalidArguments(f *fixture) {
	for _, a := range []node.LearnArgs{{Recovery: time.Hour}, {Name: f.name()}, {Name: f.name(), Recovery: time.Hour, Promote: "a b"}, {Name: f.name(), Recovery: time.Hour, Hold: -1}} {
		if _, err := f.learner().Learn(f.ctx(), a); !errors.Is(err, node.ErrInvalidArgument) {
			f.t.Errorf("Learn(%+v) = %v, want ErrInvalidArgument", a, err)
		}
	}
}

// empty reports whether a holding shows nothing of a key: no holder, no
// counter (the node's standing is the server's, not the key's).
func empty(h node.Holding) bool {
	h.Standing = node.Standing{}
	return h == node.Holding{}
}
