package quorum

import (
	"fmt"
	"slices"
	"testing"
)

// A node's answer in the enumeration: refusals name holder A or B (a
// pending node may also name a third holder, see reach).
const (
	granted = iota
	refusedA
	refusedB
	sitsOut
	failed
	pending
	answers // the number of the above
)

// majority is the oracle: more than half of n, stated without Of.
func majority(n, k int) bool { return 2*k > n }

func TestOfIsTheSmallestMajority(t *testing.T) {
	for n := 1; n <= 100; n++ {
		q := Of(n)
		if !majority(n, q) || majority(n, q-1) {
			t.Fatalf("Of(%d) = %d: not the smallest majority", n, q)
		}
		if Spare(n) != n-q || Short(n, 0) != q || Short(n, q) != 0 {
			t.Fatalf("n=%d: Spare %d Short(0) %d Short(q) %d", n, Spare(n), Short(n, 0), Short(n, q))
		}
		for k := 0; k <= n; k++ {
			if Reached(n, k) != majority(n, k) {
				t.Fatalf("Reached(%d, %d) = %v", n, k, Reached(n, k))
			}
		}
	}
}

// state is a round's votes as counts, with every holder's refusals (sorted
// descending): what an outcome can depend on.
type state struct {
	n, granted, out, failed int
	holders                 []int
}

func (s state) refused() int { return sum(s.holders) }
func (s state) pending() int { return s.n - s.granted - s.refused() - s.out - s.failed }

func (s state) votes() Votes {
	v := Votes{N: s.n, Granted: s.granted, Refused: s.refused(), Out: s.out, Failed: s.failed}
	if len(s.holders) > 0 {
		v.Top = s.holders[0]
	}
	return v
}

// key packs s in base 8 (up to 7 nodes): the memo's key.
func (s state) key() uint64 {
	k := uint64(s.n)<<9 | uint64(s.granted)<<6 | uint64(s.out)<<3 | uint64(s.failed)
	for _, h := range s.holders {
		k = k<<3 | uint64(h)
	}
	return k<<3 | uint64(len(s.holders))
}

// next returns the states one more answer can lead to: a grant, a refusal
// naming each holder so far or a new one, a node sitting out, a failure.
func (s state) next() []state {
	if s.pending() == 0 {
		return nil
	}
	with := func(f func(*state)) state {
		c := s
		c.holders = slices.Clone(s.holders)
		f(&c)
		slices.SortFunc(c.holders, func(a, b int) int { return b - a })
		return c
	}
	out := []state{
		with(func(c *state) { c.granted++ }),
		with(func(c *state) { c.out++ }),
		with(func(c *state) { c.failed++ }),
		with(func(c *state) { c.holders = append(c.holders, 1) }),
	}
	for i := range s.holders {
		out = append(out, with(func(c *state) { c.holders[i]++ }))
	}
	return out
}

// reach is the set of outcomes (a bit each), and of Won-ness (bit 0: not
// won, bit 1: won), of every state that s can lead to, s included.
type reach struct{ outcomes, won uint }

func reachable(s state, q Question, memo map[uint64]reach) reach {
	k := s.key()
	if r, ok := memo[k]; ok {
		return r
	}
	v := s.votes()
	r := reach{outcomes: 1 << v.Outcome(q), won: 1}
	if v.Won() {
		r.won = 2
	}
	for _, c := range s.next() {
		cr := reachable(c, q, memo)
		r.outcomes |= cr.outcomes
		r.won |= cr.won
	}
	memo[k] = r
	return r
}

// expected is the outcome from the definitions, with the oracle's
// majority: for Take, a quorum granted, one holder has a quorum, the nodes
// that did not fail are no quorum, the grants can no longer reach one, or
// none of these; for Confirm, granted, the nodes that did not refuse are no
// quorum, the grants can no longer reach one, or none of these.
func expected(s state, q Question) Outcome {
	n, top := s.n, 0
	if len(s.holders) > 0 {
		top = s.holders[0]
	}
	cannot := !majority(n, s.granted+s.pending())
	switch {
	case majority(n, s.granted):
		return Won
	case q == Take && majority(n, top):
		return Held
	case q == Take && !majority(n, n-s.failed):
		return Unreachable
	case q == Take && cannot:
		return Split
	case q == Confirm && !majority(n, n-s.refused()):
		return Refused
	case q == Confirm && cannot:
		return Unreachable
	}
	return Undecided
}

// TestEveryVoteVector checks every vote vector of 1 to 7 nodes (each node
// granted, refused for holder A or B, sitting out, failed, or not answered
// yet), for both questions, against the definitions and invariants:
//   - won only with a quorum of grants; never won and held, refused or
//     unreachable; a split has no holder with a quorum and cannot win;
//   - the predicates match the oracle's majority (more than half);
//   - the outcome is never Undecided once every node answered;
//   - Decided exactly when no more answers can change whether it is won,
//     Final exactly when no more answers can change the outcome;
//   - Decided and, for Confirm, Final are the formulas redlock used before
//     this package (tally.decided, extendTally.settled).
func TestEveryVoteVector(t *testing.T) {
	for n := 1; n <= 7; n++ {
		memo := map[Question]map[uint64]reach{Take: {}, Confirm: {}}
		vec := make([]int, n)
		count := 0
		for {
			count++
			checkVector(t, n, vec, memo)
			if t.Failed() {
				return
			}
			i := 0
			for ; i < n; i++ {
				if vec[i]++; vec[i] < answers {
					break
				}
				vec[i] = 0
			}
			if i == n {
				break
			}
		}
		if want := pow(answers, n); count != want {
			t.Fatalf("n=%d: %d vectors, want %d", n, count, want)
		}
	}
}

func checkVector(t *testing.T, n int, vec []int, memo map[Question]map[uint64]reach) {
	t.Helper()
	s := state{n: n}
	var a, b int
	for _, x := range vec {
		switch x {
		case granted:
			s.granted++
		case refusedA:
			a++
		case refusedB:
			b++
		case sitsOut:
			s.out++
		case failed:
			s.failed++
		}
	}
	for _, h := range []int{max(a, b), min(a, b)} {
		if h > 0 {
			s.holders = append(s.holders, h)
		}
	}
	v := s.votes()
	p := s.pending()
	where := lazy(func() string { return fmt.Sprintf("n=%d %v (%+v)", n, vec, v) })
	if v.Pending() != p {
		t.Fatalf("%s: Pending %d, want %d", where, v.Pending(), p)
	}
	// The predicates, against the oracle.
	for _, c := range []struct {
		name      string
		got, want bool
	}{
		{"Won", v.Won(), majority(n, s.granted)},
		{"CannotWin", v.CannotWin(), !majority(n, s.granted+p)},
		{"Unreachable", v.Unreachable(), !majority(n, n-s.failed)},
		{"Denied", v.Denied(), !majority(n, n-s.refused())},
		{"Held", v.Held(), majority(n, v.Top)},
		{"MissesAMajority", v.MissesAMajority(), majority(n, s.failed)},
	} {
		if c.got != c.want {
			t.Fatalf("%s: %s = %v, want %v", where, c.name, c.got, c.want)
		}
	}
	// Never won and lost.
	if v.Won() && (v.CannotWin() || v.Held() || v.Denied() || v.Unreachable()) {
		t.Fatalf("%s: won and lost at once", where)
	}
	if v.Held() && v.Unreachable() {
		t.Fatalf("%s: held by another and unreachable at once", where)
	}
	// The formulas redlock's tally and extendTally used before.
	q := n/2 + 1
	oldDecided := s.granted >= q || s.refused()+s.out+s.failed > n-q
	if v.Decided() != oldDecided {
		t.Fatalf("%s: Decided %v, tally.decided %v", where, v.Decided(), oldDecided)
	}
	for _, qu := range []Question{Take, Confirm} {
		o := v.Outcome(qu)
		if want := expected(s, qu); o != want {
			t.Fatalf("%s q=%d: Outcome %v, want %v", where, qu, o, want)
		}
		switch {
		case o == Won && !majority(n, s.granted):
			t.Fatalf("%s: won without a quorum of grants", where)
		case o == Split && (v.Held() || !v.CannotWin() || v.Unreachable()):
			t.Fatalf("%s: split, but a holder has a quorum, or it can still win, or failures alone", where)
		case p == 0 && o == Undecided:
			t.Fatalf("%s q=%d: every node answered, yet undecided", where, qu)
		}
		r := reachable(s, qu, memo[qu])
		if final := r.outcomes == 1<<o; v.Final(qu) != final {
			t.Fatalf("%s q=%d: %v, Final %v, yet more answers can lead to outcomes %06b", where, qu, o, v.Final(qu), r.outcomes)
		}
		if decided := r.won == 1 || r.won == 2; v.Decided() != decided {
			t.Fatalf("%s: Decided %v, yet Won-ness can become %02b", where, v.Decided(), r.won)
		}
		if qu == Confirm && s.out == 0 {
			left := n - s.granted - s.refused() - s.failed
			settled := s.granted >= q || s.refused() > n-q || (oldDecided && s.refused()+left <= n-q)
			if v.Final(Confirm) != settled {
				t.Fatalf("%s: Final(Confirm) %v, extendTally.settled %v", where, v.Final(Confirm), settled)
			}
		}
	}
}

// Refused beats the failures in a Confirm round: with an even N, half the
// nodes refusing and half failing is a lost key, not an unreachable
// quorum (Release and Extend say ErrLockLost then).
func TestConfirmRefusedBeatsFailures(t *testing.T) {
	v := Votes{N: 4, Refused: 2, Failed: 2, Top: 2}
	if !v.Unreachable() || !v.Denied() {
		t.Fatalf("%+v: want both Unreachable and Denied", v)
	}
	if o := v.Outcome(Confirm); o != Refused {
		t.Fatalf("Confirm: %v, want refused", o)
	}
	if o := v.Outcome(Take); o != Unreachable { // two of four is no holder's quorum
		t.Fatalf("Take: %v, want unreachable", o)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range []string{"undecided", "won", "held", "refused", "unreachable", "split"} {
		if got := Outcome(o).String(); got != want {
			t.Fatalf("Outcome(%d) = %q, want %q", o, got, want)
		}
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func pow(b, e int) int {
	r := 1
	for range e {
		r *= b
	}
	return r
}

// lazy formats only when printed: the enumeration checks ~335,000 vectors.
type lazy func() string

func (l lazy) String() string { return l() }
