package redlock

import (
	"errors"
	"fmt"
	"time"
)

// tally counts one operation's answers against the quorum: yes, no, and
// failed (an error, silence, or a yes that does not count). Every quorum
// decision reads it, so "a majority said yes" and "a majority can no longer
// say yes" mean the same everywhere, and ErrQuorumUnreachable is built in
// one place, from the failures it recorded.
type tally struct {
	n, q     int // nodes asked in all, and the majority of them
	yes, no  int
	out      int     // yes votes of nodes sitting out (recovery.go): neither yes nor failures
	failures []error // each a *NodeError
}

func (c *Client) newTally() tally { return tally{n: len(c.nodes), q: c.quorum} }

// fail records a node's failure.
func (t *tally) fail(err error) { t.failures = append(t.failures, err) }

// failAll records failures (presumeFailing's, presumeSilent's).
func (t *tally) failAll(errs []error) { t.failures = append(t.failures, errs...) }

// notCounted records the yes of a node that answered but whose yes does
// not count (it has not said who it is, say), as that node's failure: the
// quorum needs that many other nodes, and the error says why.
func (t *tally) notCounted(name, op string, why error) {
	t.fail(&NodeError{Node: name, Op: op, Err: why})
}

// won reports whether a majority said yes.
func (t *tally) won() bool { return t.yes >= t.q }

// beyondReach reports whether a majority can no longer say yes: more nodes
// said no, sat out or failed than a majority can spare.
func (t *tally) beyondReach() bool { return t.no+t.out+len(t.failures) > t.n-t.q }

// decided reports whether more answers cannot change the outcome.
func (t *tally) decided() bool { return t.won() || t.beyondReach() }

// unreachable reports whether failures alone leave no majority.
func (t *tally) unreachable() bool { return len(t.failures) > t.n-t.q }

// missesAMajority reports whether the nodes that answered are too few to
// meet every majority (at most n-q of them): a key held on a majority may
// be on none of them.
func (t *tally) missesAMajority() bool { return len(t.failures) >= t.q }

// err is the error of an operation (what, e.g. `acquire "k"`) that too many
// nodes failed: it wraps ErrQuorumUnreachable and each node's failure.
func (t *tally) err(what string) error {
	return fmt.Errorf("%w: %s: %d of %d nodes failed: %w", ErrQuorumUnreachable, what, len(t.failures), t.n, t.joined())
}

// joined is the nodes' failures as one error (nil when none).
func (t *tally) joined() error { return errors.Join(t.failures...) }

// collectRules are a round's stopping rules beyond "every node answered".
type collectRules struct {
	untilDecided bool // stop once the tally is decided
	// stragglers, when not zero: once a majority replied, the nodes still
	// waited for get as long again as the replies took, at least this long
	// (see round.stragglersDue), and are then presumed silent.
	stragglers time.Duration
}

// collect reads r's answers into count (which updates t) until the rules
// say stop, count returns an error (returned), or every node answered. It
// never waits for failing nodes once a majority replied and only they are
// left (see onlyFailingLeft): they are recorded as failures.
func (r *round[T]) collect(t *tally, rules collectRules, count func(answer[T]) error) error {
	for !rules.untilDecided || !t.decided() {
		if r.onlyFailingLeft() {
			t.failAll(r.presumeFailing())
			return nil
		}
		var stragglers <-chan time.Time
		if rules.stragglers > 0 && r.replies >= t.q {
			stragglers = r.stragglersDue(rules.stragglers)
		}
		a, ok := r.nextBefore(stragglers)
		if !ok {
			t.failAll(r.presumeSilent()) // none unless the stragglers' wait ran out
			return nil
		}
		if err := count(a); err != nil {
			return err
		}
	}
	return nil
}
