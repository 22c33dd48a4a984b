package extend

import (
	"container/heap"
	"time"
)

// queue orders the kept leases by the instant the watchdog must look at
// each again, so that a wake-up visits only the leases that need it and
// keeping N leases costs O(N log N), not a scan of every lease per Keep.
type queue[L Lease] []*entry[L]

func (q queue[L]) Len() int           { return len(q) }
func (q queue[L]) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q queue[L]) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue[L]) Push(x any) {
	e := x.(*entry[L])
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *queue[L]) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	e.index = -1
	return e
}

// schedule (re)places e at instant at.
func (q *queue[L]) schedule(e *entry[L], at time.Time) {
	e.at = at
	if e.index >= 0 {
		heap.Fix(q, e.index)
		return
	}
	heap.Push(q, e)
}

// remove takes e out of the queue, if it is in.
func (q *queue[L]) remove(e *entry[L]) {
	if e.index >= 0 {
		heap.Remove(q, e.index)
	}
}

// next is the earliest instant in the queue (ok false when empty).
func (q queue[L]) next() (time.Time, bool) {
	if len(q) == 0 {
		return time.Time{}, false
	}
	return q[0].at, true
}
