// Package ballot reads the answers of one acquire round: which yes votes
// count (a learner's, after data loss, only as internal/recovery says),
// which other token leads the nodes that refused, whether it holds a
// majority, and when enough of its keys expire for a majority to be free.
// It reads the answers and decides nothing of what the client does next;
// it imports nothing of the client.
package ballot

import (
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/internal/recovery"
	"github.com/quorumlock/quorumlock/node"
)

// Ballot is what an attempt's answers came to.
type Ballot struct {
	Tally     quorum.Tally
	Yes       []quorum.Answer[node.AcquireReply] // said yes
	Others    []quorum.Answer[node.AcquireReply] // held by another token
	Prev      node.Holding                       // the previous holder with the largest fence reported
	ConfigErr error                              // found while identifying a node late
	Rec       *recovery.Judge                    // nil when recovery is off
}

// New is the empty ballot of a round over n nodes, whose nodes that lost
// their data rec judges.
func New(n int, rec *recovery.Judge) Ballot {
	return Ballot{Tally: quorum.NewTally(n), Rec: rec, Yes: make([]quorum.Answer[node.AcquireReply], 0, n)}
}

// Recount makes the tally's yes the votes that count: a learner's yes
// counts only when every node answered as a learner (internal/recovery).
func (b *Ballot) Recount() {
	t := &b.Tally
	v, learners := b.Rec.Count(quorum.Votes{N: t.N, Refused: t.Refused, Failed: t.Failed}, len(b.Yes))
	t.Granted, t.Out = v.Granted, v.Out
	t.WaitAll = v.Granted+v.Out < len(b.Yes) && learners > 0
}

// Votes is the ballot as internal/quorum reads it, with the most nodes one
// other token holds (Top), leaving out undone (the release ids of the
// tokens the caller gave up); and that token's release id.
func (b *Ballot) Votes(undone []string) (quorum.Votes, string) {
	v := b.Tally.Votes
	top, votes := b.Leader(undone)
	v.Top = votes
	return v, top
}

// Outcome is what the attempt's answers come to so far (quorum.Take).
func (b *Ballot) Outcome(undone []string) quorum.Outcome {
	v, _ := b.Votes(undone)
	return v.Outcome(quorum.Take)
}

// HeldByAMajority reports whether one other token, not among undone,
// holds a majority of the nodes.
func (b *Ballot) HeldByAMajority(undone []string) bool {
	v, _ := b.Votes(undone)
	return v.Held()
}

// HeldBy marks the nodes that answered "held by another token": our token
// cannot be there, so an undo skips them.
func (b *Ballot) HeldBy() []bool {
	skip := make([]bool, b.Tally.N)
	for _, a := range b.Others {
		skip[a.Node] = true
	}
	return skip
}

// Leader returns the holder with the most nodes among the refusals (ties:
// the smallest release id) and its count, leaving out undone.
func (b *Ballot) Leader(undone []string) (string, int) {
	counts := make(map[string]int, 2)
	best, most := "", 0
	for _, a := range b.Others {
		h := a.Val.Holder
		if slices.Contains(undone, h) {
			continue
		}
		counts[h]++
		if k := counts[h]; k > most || (k == most && h < best) {
			best, most = h, k
		}
	}
	return best, most
}

// HolderWait estimates when enough holders' keys expire for a majority to be
// free. It is zero when unknown (a node gave no TTL). When the answers
// alone leave a majority free (a split: nodes that failed or were silent
// count as free here, but some held the key), it is when the last key
// reported expires: an expiry is announced to nobody, and a waiter that
// gives the split up would otherwise sleep its whole retry delay.
func (b *Ballot) HolderWait() time.Duration {
	n := b.Tally.N
	ttls := make([]time.Duration, len(b.Others))
	for i, a := range b.Others {
		ttls[i] = a.Val.HolderTTL
	}
	free := n - len(ttls)
	need := quorum.Short(n, free) // this many of the held nodes must expire
	if need <= 0 {
		need = len(ttls)
	}
	if need == 0 || need > len(ttls) {
		return 0
	}
	slices.Sort(ttls)
	if ttls[0] <= 0 {
		return 0
	}
	return ttls[need-1]
}
