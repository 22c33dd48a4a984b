// Package quorum decides what a round's votes come to: a round asks N
// nodes one question at once, each node grants, refuses, sits out or
// fails, and the votes so far are won, held by another, refused,
// unreachable, split, or undecided yet. It holds the only majority
// arithmetic of the repository (Of: N/2+1, what a majority can spare,
// whether one can still be reached), so that "a majority said yes" and "a
// majority can no longer say yes" mean the same in every operation.
//
// The verdicts (Votes) are pure: counts in, verdicts out. The Round that
// gathers the votes is here too, with its one collection loop (Collect)
// and its stopping rules, so that every operation waits the same way; what
// a round needs of the client that runs it (its nodes' health, their
// errors, its log and observer) comes through Caller, and this package
// imports nothing of the client.
package quorum

// Of returns the quorum of n nodes: the smallest majority, n/2+1.
func Of(n int) int { return n/2 + 1 }

// Spare returns how many of n nodes can refuse or fail with a quorum of the
// others still possible: n - Of(n).
func Spare(n int) int { return n - Of(n) }

// Reached reports whether k of n nodes are a quorum.
func Reached(n, k int) bool { return k >= Of(n) }

// Short returns how many nodes beyond k of n a quorum still needs (zero or
// less when k already is one).
func Short(n, k int) int { return Of(n) - k }

// Question is what a round asks each node; it says what a refusal means.
type Question uint8

const (
	// Take asks for the key (an acquire): a node refuses when another
	// token holds it there, and the refusals of one holder (Votes.Top)
	// can make a majority: Held.
	Take Question = iota
	// Confirm asks whether the key is still ours (an extension, a
	// release, a fence raise): a refusal says it is not, and refusals that
	// alone leave no majority are final (Refused), whatever else failed.
	Confirm
)

// Outcome is what a round's votes come to.
type Outcome uint8

const (
	// Undecided: a quorum may still grant.
	Undecided Outcome = iota
	// Won: a quorum granted.
	Won
	// Held (Take): one other holder has a quorum of the nodes.
	Held
	// Refused (Confirm): the refusals alone leave no quorum: the key is
	// not ours, whatever else failed.
	Refused
	// Unreachable: no quorum can grant any more, and the failures are why:
	// alone (Take), or with fewer refusals than would be enough alone
	// (Confirm: had the failed nodes answered, they could have confirmed).
	Unreachable
	// Split (Take): no quorum can grant any more, yet no one holder has a
	// quorum and the failures alone are not why: the refusals of several
	// holders, or with failures or nodes sitting out, leave nobody one.
	Split
)

var outcomeNames = [...]string{"undecided", "won", "held", "refused", "unreachable", "split"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome?"
}

// Votes counts a round's answers so far. A node that has not answered
// counts in none of Granted, Refused, Out and Failed (see Pending).
type Votes struct {
	N       int // nodes asked in all
	Granted int // said yes, and the yes counts
	Refused int // said no: another token holds the key, or it is not ours
	Out     int // said yes, but sits the round out (lost its data): neither a grant nor a failure
	Failed  int // failed, stayed silent, or said a yes that does not count
	Top     int // Take: of Refused, the most that name one other holder
}

// Quorum is Of(v.N).
func (v Votes) Quorum() int { return Of(v.N) }

// Pending is how many nodes have not answered yet.
func (v Votes) Pending() int { return v.N - v.Granted - v.Refused - v.Out - v.Failed }

// Won reports whether a quorum granted.
func (v Votes) Won() bool { return Reached(v.N, v.Granted) }

// CannotWin reports whether a quorum can no longer grant: more nodes
// refused, sat out or failed than a quorum can spare.
func (v Votes) CannotWin() bool { return v.Refused+v.Out+v.Failed > Spare(v.N) }

// Decided reports whether more answers cannot change whether the round is
// won: it is, or it no longer can be. (Which way a lost round was lost may
// still change: see Final.)
func (v Votes) Decided() bool { return v.Won() || v.CannotWin() }

// Unreachable reports whether the failures alone leave no quorum.
func (v Votes) Unreachable() bool { return v.Failed > Spare(v.N) }

// Denied reports whether the refusals alone leave no quorum.
func (v Votes) Denied() bool { return v.Refused > Spare(v.N) }

// Held reports whether one other holder (Top) has a quorum of the nodes.
func (v Votes) Held() bool { return Reached(v.N, v.Top) }

// MissesAMajority reports whether the nodes that answered are too few to
// meet every quorum: the failed nodes alone are one, so a key held on a
// quorum may be on none of the others.
func (v Votes) MissesAMajority() bool { return Reached(v.N, v.Failed) }

// Outcome is what the votes come to so far, for question q: Won, Held
// (Take), Refused (Confirm), Unreachable, Split (Take) or Undecided. No two
// of them can hold at once (see the definitions), whatever the order of
// the checks below.
func (v Votes) Outcome(q Question) Outcome {
	switch {
	case v.Won():
		return Won
	case q == Take && v.Held():
		return Held
	case q == Confirm && v.Denied():
		return Refused
	case q == Take && v.Unreachable(), q == Confirm && v.CannotWin():
		return Unreachable
	case v.CannotWin():
		return Split
	}
	return Undecided
}

// Final reports whether the answers still pending cannot change the
// outcome for question q, however they come: the round may stop reading
// them. Won, Held and Refused are final at once, and so is a Take round's
// Unreachable; a Confirm round's Unreachable is final once the pending
// nodes cannot make the refusals enough alone, a Take round's Split once
// they can make neither one holder's refusals nor the failures a quorum.
func (v Votes) Final(q Question) bool {
	p := v.Pending()
	switch v.Outcome(q) {
	case Won, Held, Refused:
		return true
	case Unreachable:
		return q == Take || v.Refused+p <= Spare(v.N)
	case Split:
		return !Reached(v.N, v.Top+p) && v.Failed+p <= Spare(v.N)
	}
	return false
}

// WithLearners places in v the yes votes of learners, nodes that lost their
// data and have not kept it for the recovery period yet (v counts none of
// them: its Granted are voters' yes votes). They count as granted once every
// node answered and none shows an earlier deployment (a voter, or a learner
// told of a hold clients asked of it: a new deployment, where no node kept
// data that could contradict them); they stay pending while that may still
// happen (no such answer yet and nothing failed); otherwise they sit out.
// The rule needs no timing: a voter that answers late is waited for.
func (v Votes) WithLearners(learnerYes int, earlier bool) Votes {
	switch {
	case learnerYes == 0:
	case earlier || v.Failed > 0:
		v.Out += learnerYes
	case v.Pending() == learnerYes:
		v.Granted += learnerYes
	}
	return v
}
