package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// health remembers, per node, until when it counts as failing: a node whose
// last answer was an error or silence, for one node timeout after it. An
// attempt does not wait for such a node to decide that a majority is out of
// reach (with exactly a quorum of nodes alive, waiting for the dead ones
// would cost every contended attempt a node timeout). Its requests are
// still sent, and its next answer clears it; a "yes" never counts unless it
// arrives.
type health struct {
	until []atomic.Int64 // unix nanoseconds; 0: healthy
}

// errFailing is the failure recorded for a failing node whose answer an
// attempt did not wait for.
var errFailing = errors.New("failing recently; its answer was not awaited")

// noteAnswer records node i's answer to a request of op made under parent.
// An identify request's failure marks nothing: its timeout (first contact,
// at least identifyTimeout) is not a lock's node timeout, and marking the
// node for that long made single attempts give up with every node back up
// (chaos/sim seed 1042); an unidentified node's answers do not count anyway.
func (c *Client) noteAnswer(parent context.Context, op string, i int, err error, timeout time.Duration) {
	switch {
	case err == nil:
		if c.health.until[i].Load() != 0 {
			c.health.until[i].Store(0)
		}
	case op == opIdentify:
	case parent.Err() == nil: // not the caller's own cancellation
		c.health.until[i].Store(time.Now().Add(timeout).UnixNano())
	}
}

func (c *Client) failing(i int) bool {
	u := c.health.until[i].Load()
	return u != 0 && time.Now().UnixNano() < u
}
