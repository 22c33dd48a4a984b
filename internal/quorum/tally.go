package quorum

// Tally counts one operation's answers against the quorum: the Votes, with
// the failures that make up Failed (an error, silence, or a yes that does
// not count), so that the caller can say why a majority was out of reach.
// Its verdicts are the Votes'.
type Tally struct {
	Votes
	Failures []error // one per failed node; Failed is their count
	// WaitAll: learners' yes votes wait for every node's answer (see
	// Votes.WithLearners), so no straggler is presumed silent (Rules).
	WaitAll bool
}

// NewTally returns the tally of an operation on n nodes.
func NewTally(n int) Tally { return Tally{Votes: Votes{N: n}} }

// Fail records a node's failure.
func (t *Tally) Fail(err error) {
	t.Failures = append(t.Failures, err)
	t.Failed++
}

// FailAll records several nodes' failures.
func (t *Tally) FailAll(errs []error) {
	t.Failures = append(t.Failures, errs...)
	t.Failed += len(errs)
}

// CountHeld counts an answer to "is it ours?" (a fence raise, a delete): a
// failure, a yes (Granted) or a no (Refused). It never returns an error:
// it is a count function for Collect.
func (t *Tally) CountHeld(a Answer[bool]) error {
	switch {
	case a.Err != nil:
		t.Fail(a.Err)
	case a.Val:
		t.Granted++
	default:
		t.Refused++
	}
	return nil
}
