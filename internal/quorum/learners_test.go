package quorum

import (
	"slices"
	"testing"
)

// Every vote vector of up to 7 nodes, each a voter's yes or no, a
// learner's yes or no, a failure, or pending: learners' yes votes count
// only when every node answered and none is a voter, are pending only
// while that may still happen, and sit out otherwise; nothing else moves.
func TestWithLearnersEveryVector(t *testing.T) {
	const (
		voterYes = iota
		voterNo
		learnerYes
		learnerNo
		failed
		pending
		kinds
	)
	for n := 1; n <= 7; n++ {
		vec := make([]int, n)
		for code := range pow(kinds, n) {
			c := code
			counts := [kinds]int{}
			for i := range vec {
				vec[i] = c % kinds
				c /= kinds
				counts[vec[i]]++
			}
			base := Votes{N: n, Granted: counts[voterYes], Refused: counts[voterNo] + counts[learnerNo], Failed: counts[failed]}
			v := base.WithLearners(counts[learnerYes], counts[voterYes]+counts[voterNo] > 0)
			all := counts[pending] == 0 && counts[failed] == 0
			noVoter := counts[voterYes]+counts[voterNo] == 0
			var want Votes = base
			switch {
			case counts[learnerYes] == 0:
			case all && noVoter:
				want.Granted += counts[learnerYes]
			case noVoter && counts[failed] == 0:
			default:
				want.Out += counts[learnerYes]
			}
			if v != want {
				t.Fatalf("n=%d %v: %+v, want %+v", n, vec, v, want)
			}
			if v.Won() && v.Granted > counts[voterYes] && !(all && noVoter) {
				t.Fatalf("n=%d %v: won on learners' votes without every node a learner", n, vec)
			}
		}
	}
}

// The acquisition of a second client while a first holds the key, over
// every configuration of 3 and 5 nodes: each node is a keeper (kept its
// data: a voter holding the first client's key), a voter without the key,
// or a learner (lost its data, or a new deployment's: it grants); each
// answers or stays silent; answers arrive in every order, and the round
// stops as soon as it is decided, as the client's does. The first client
// holds the key on a majority of the nodes it had before any loss, so the
// keepers and the learners that lost it are those. The second client may
// win only when every node is a learner (every node lost its data: not
// covered).
func TestLearnersNeverLetASecondHolderIn(t *testing.T) {
	const (
		keeper = iota
		voter
		learner
	)
	for _, n := range []int{3, 5} {
		kinds := make([]int, n)
		for code := range pow(3, n) {
			c := code
			for i := range kinds {
				kinds[i] = c % 3
				c /= 3
			}
			// The first client's majority: its keepers and learners (nodes
			// that lost its key); voters never had it. Without a majority
			// of such nodes the first client could not have held the key.
			if !Reached(n, n-count(kinds, voter)) {
				continue
			}
			for silent := range 1 << n {
				answering := []int{}
				for i := range n {
					if silent&(1<<i) == 0 {
						answering = append(answering, i)
					}
				}
				forEachOrder(answering, func(order []int) {
					if won := round(n, kinds, order); won && count(kinds, learner) != n {
						t.Fatalf("n=%d kinds %v (0 keeper, 1 voter, 2 learner), answers in order %v: a second holder", n, kinds, order)
					}
				})
			}
		}
	}
}

// round is the second client's attempt: answers in order, then the silent
// nodes fail; it reports whether the attempt won.
func round(n int, kinds, order []int) bool {
	var voterYes, refused, learnerYes int
	voterAnswered := false
	votes := func(failed int) Votes {
		v := Votes{N: n, Granted: voterYes, Refused: refused, Failed: failed, Top: refused}
		return v.WithLearners(learnerYes, voterAnswered)
	}
	for _, i := range order {
		switch kinds[i] {
		case 0: // keeper: held by the first client
			refused++
			voterAnswered = true
		case 1:
			voterYes++
			voterAnswered = true
		case 2:
			learnerYes++
		}
		if v := votes(0); v.Decided() {
			return v.Won()
		}
	}
	return votes(n - len(order)).Won()
}

func count(xs []int, k int) int {
	c := 0
	for _, x := range xs {
		if x == k {
			c++
		}
	}
	return c
}

// forEachOrder calls f with every permutation of xs.
func forEachOrder(xs []int, f func([]int)) {
	var perm func(k int)
	p := slices.Clone(xs)
	perm = func(k int) {
		if k == len(p) {
			f(p)
			return
		}
		for i := k; i < len(p); i++ {
			p[k], p[i] = p[i], p[k]
			perm(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	perm(0)
}
