package redlock

import "sync/atomic"

// unanswered counts, per node, the requests of one token that could still
// set its key there (acquires and extensions) and whose reply has not come
// back. A request that failed (a timeout, a broken connection) stays
// counted for good: it may still land. Release leaves a tombstone only on
// the nodes where the count is not zero; on the others every request of
// the token has already run, so none can set the key after the release,
// and the tombstone, a write and a key per release, is not needed
// (TestReleaseTombstonesOnlyUnansweredNodes).
type unanswered []atomic.Int32

func newUnanswered(nodes int) unanswered { return make(unanswered, nodes) }

// call runs f, a request of the token to node i, counting it until it
// returns a reply.
func call[T any](u unanswered, i int, f func() (T, error)) (T, error) {
	u.send(i)
	v, err := f()
	u.answered(i, err)
	return v, err
}

// send counts a request to node i.
func (u unanswered) send(i int) { u[i].Add(1) }

// answered uncounts a request to node i that came back without error.
func (u unanswered) answered(i int, err error) {
	if err == nil {
		u[i].Add(-1)
	}
}

// pending reports whether a request of the token to node i may still land.
// A nil unanswered knows nothing: every node may.
func (u unanswered) pending(i int) bool { return u == nil || u[i].Load() != 0 }
