package node

import (
	"context"
	"strings"
	"time"
)

// Standing is whether a node's answers count toward a quorum, by what the
// node holds rather than by timing. Each node keeps one record of its own
// (in a Redis Cluster, one per hash slot): a node that lost its data (a
// restart without persistence, FLUSHALL, a failover to an empty replica)
// has lost that record too, writes a new one and learns: it keeps its data
// for the client's recovery period, or for the longest hold (Hold) if that
// is longer, counted by its own clock in steps of at most LearnStep, before
// it votes again. A node whose record is missing or
// learning on every node of an answering round is a new deployment: the
// client then promotes each record (Learner.Learn) and they vote at once.
type Standing struct {
	// Known is false for a node that keeps no record (it counts as a
	// voter) or a call that did not ask (AcquireArgs.Recovery zero).
	Known bool
	// Voting: the node counts.
	Voting bool
	// Learned is how long a learning node has kept its data.
	Learned time.Duration
	// ID names a learning record (its creation), for Learn's Promote: a
	// record written since (the node lost its data again) is not
	// promoted by a round that saw the earlier one.
	ID string
	// Scope is the record's key on the node: one per server, or one per
	// hash slot in a Redis Cluster.
	Scope string
	// Hold is the longest hold past the recovery period that the node was
	// told of (AcquireArgs.Hold, LearnArgs.Hold): a learning node keeps its
	// data this long too before it votes, so that no hold it lost is still
	// in force. A voter reports it only when it is longer than the period
	// and the hold asked with: what the caller does not know yet.
	Hold time.Duration
}

// Remaining is how long a learning node still sits out, by its own clock,
// under a client's recovery period: zero once it has learned the period
// and its Hold.
func (s Standing) Remaining(period time.Duration) time.Duration {
	if !s.Known || s.Voting {
		return 0
	}
	return max(period, s.Hold) - s.Learned
}

// LearnStep is the most a learning node's record adds per call: the time
// its clock moved since the previous call, at least zero and at most this.
// A server clock that steps forward (or back) therefore moves a learning
// node on by at most LearnStep; clients that see a node learning ask it
// more often than that (Learner), so it learns at the clock's rate.
const LearnStep = time.Second

// Learner is the optional capability that keeps a learning node moving
// and promotes the records of a new deployment.
type Learner interface {
	// Learn advances the record of name's scope by the time since its last
	// step (as every Acquire does), making it voting once it has learned
	// a.Recovery; or, when a.Promote names the learning record, makes it
	// voting at once. It reports the standing after.
	Learn(ctx context.Context, a LearnArgs) (Standing, error)
}

// LearnArgs are the arguments of Learner.Learn.
type LearnArgs struct {
	Name     string        // a lock name: its scope's record
	Recovery time.Duration // the client's recovery period (positive)
	Promote  string        // the ID of the learning record to promote; "": none
	Hold     time.Duration // the longest hold the client knows of (Standing.Hold); 0: none
}

// Validate reports ErrInvalidArgument for arguments no node can carry out.
func (a LearnArgs) Validate() error {
	switch {
	case a.Name == "":
		return invalid("empty name")
	case a.Recovery <= 0:
		return invalid("recovery period %s of %q is not positive", a.Recovery, a.Name)
	case a.Hold < 0:
		return invalid("negative hold %s of %q", a.Hold, a.Name)
	case strings.ContainsAny(a.Promote, " \t\n"):
		return invalid("record id %q has a space", a.Promote)
	}
	return nil
}
