package redlock

// WithReleaseNotifications turns waiting without polling on (true, the
// default) or off (false).
//
// On: an Acquire that finds the key held marks it on those nodes, and
// Release (and the undo of a failed attempt) announces the release of a
// marked key on a Pub/Sub channel of each node (the client's key prefix +
// "released", e.g. "lock:released"; the message is the release id and the
// key's full name): a release nobody waited for publishes nothing. The
// Acquire that lost to another holder waits for that announcement,
// for the holder's remaining TTL or for the retry policy's delay,
// whichever comes first. An Acquire joins the waiters before its first
// attempt, so a release that lands while an attempt is in flight is not
// missed. The Client keeps one subscription per node for all its waiters
// (opened by its first Acquire, which waits up to a node timeout for it;
// closed by Client.Close or after a minute without waiters), and wakes its waiters of one key one at a
// time, in arrival order. A waiter wakes only on the release of the holder
// that beat its last attempt (any release after a split vote; after an
// attempt that found no quorum, only that of a holder the answering nodes
// named, since the others may only have been slow): the undo of another
// client's lost attempt wakes nobody, so waiters of two clients cannot wake
// each other in a loop. The loser of a split vote with a waiter is woken
// early by the winner's release. A waiter woken by the holder's release
// that loses to the same holder (the release has not reached a majority
// yet) looks again after 2, 4 and 6 round trips rather than sleeping.
// Nodes that cannot subscribe (a Redis node over a bare redis.Scripter)
// still announce and simply do not wake anyone early.
//
// Off: releases are not announced (use it where an ACL forbids PUBLISH, or
// to keep a client's traffic exactly as before), and waiters sleep the retry
// policy's delays, bounded by the holder's remaining TTL.
func WithReleaseNotifications(on bool) Option {
	return func(c *config) { c.noNotify = !on }
}
