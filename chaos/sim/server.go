package sim

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// server is one simulated lock server: a memnode.Node, the state a fault
// gives it (paused: requests wait and are applied on resume), and the
// ground truth of who held the lock key on it (see truth.go). Every
// request is applied under mu, so the truth is recorded in the order the
// node applied the requests.
type server struct {
	idx   int
	mem   *memnode.Node
	bug   Bug
	truth *truth
	tr    func(format string, args ...any) // the schedule's trace (trace.go)

	mu     sync.Mutex
	paused bool
	// queue holds the requests that arrived while the server was paused,
	// or behind such a request, in arrival order: on resume they are
	// applied one after the other in that order, as a resumed server reads
	// its socket. Each is closed when it is its request's turn, with mu
	// handed over to it.
	queue []chan struct{}
}

var bg = context.Background() // a request on the server is not cut short by the client's context

// call applies f on the server, waiting while it is paused (SIGSTOP: the
// request sits in the socket until the server resumes, and then is read
// in its turn).
func call[T any](s *server, f func() (T, error)) (T, error) {
	s.mu.Lock()
	if s.paused || len(s.queue) > 0 {
		turn := make(chan struct{})
		s.queue = append(s.queue, turn)
		s.mu.Unlock()
		<-turn // mu is ours: handOver passed it on
	}
	defer s.handOver()
	return f()
}

// handOver passes mu, which the caller holds, to the first queued request,
// or unlocks it when the server is paused or nothing is queued. (A
// sync.Mutex may be unlocked by another goroutine than the one that
// locked it.)
func (s *server) handOver() {
	if s.paused || len(s.queue) == 0 {
		s.mu.Unlock()
		return
	}
	next := s.queue[0]
	s.queue = s.queue[1:]
	close(next)
}

func (s *server) acquire(a node.AcquireArgs) (node.AcquireReply, error) {
	return call(s, func() (node.AcquireReply, error) {
		if s.bug == BugAnySeed {
			seedAnyway(s.mem, a)
		}
		rep, err := s.mem.Acquire(bg, a)
		s.log("n%d applies acquire %s (waiter %v): acquired %v, holder %s for %s, err %v", s.idx, rid(a.Token), a.Waiter, rep.Acquired, shortID(rep.Holder), rep.HolderTTL, err)
		if err == nil && rep.Acquired {
			s.truth.set(s.idx, a.Token, a.TTL, "acquire")
		}
		if s.bug == BugAnonymousHolder && !rep.Acquired {
			rep.Holder = "" // a refusal says "held", not by whom
		}
		return rep, err
	})
}

func (s *server) extend(ops []node.ExtendArgs) ([]node.ExtendResult, error) {
	return call(s, func() ([]node.ExtendResult, error) {
		res, err := s.mem.Extend(bg, ops)
		for i, r := range res {
			s.log("n%d applies extend %s: %s", s.idx, rid(ops[i].Token), r)
			if r != node.NotHeld {
				s.truth.set(s.idx, ops[i].Token, ops[i].TTL, "extend:"+r.String())
			}
		}
		return res, err
	})
}

func (s *server) release(a node.ReleaseArgs) (bool, error) {
	return call(s, func() (bool, error) {
		asked := a.Tombstone
		if s.bug == BugNoTombstones {
			a.Tombstone = 0
		}
		ok, err := s.mem.Release(bg, a)
		s.log("n%d applies release %s (tombstone %s): deleted %v, err %v", s.idx, rid(a.Token), a.Tombstone, ok, err)
		if err == nil {
			s.truth.release(s.idx, a.Token, asked, ok)
		}
		return ok, err
	})
}

func (s *server) raiseFence(name, token string, fence uint64, retention time.Duration) (bool, error) {
	return call(s, func() (bool, error) { return s.mem.RaiseFence(bg, name, token, fence, retention) })
}

// forceRelease is recorded as a release of the evicted token (no workload
// calls it yet; the node contract has it).
func (s *server) forceRelease(a node.ForceReleaseArgs) (bool, error) {
	return call(s, func() (bool, error) {
		ok, err := s.mem.ForceRelease(bg, a)
		if err == nil {
			s.truth.release(s.idx, a.Token, a.Tombstone, ok)
		}
		return ok, err
	})
}

func (s *server) scan(a node.ScanArgs) (node.ScanPage, error) {
	return call(s, func() (node.ScanPage, error) { return s.mem.Scan(bg, a) })
}

func (s *server) inspect(name string) (node.Holding, error) {
	return call(s, func() (node.Holding, error) { return s.mem.Inspect(bg, name) })
}

func (s *server) learn(a node.LearnArgs) (node.Standing, error) {
	return call(s, func() (node.Standing, error) { return s.mem.Learn(bg, a) })
}

func (s *server) identify() (node.Identity, error) {
	return call(s, func() (node.Identity, error) { return s.mem.Identify(bg) })
}

// Faults.

func (s *server) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
	s.log("n%d paused", s.idx)
}

// resume lets the queued requests in, in their order.
func (s *server) resume() {
	s.mu.Lock()
	if !s.paused {
		s.mu.Unlock()
		return
	}
	s.paused = false
	s.log("n%d resumes with %d requests queued", s.idx, len(s.queue))
	s.handOver()
}

// setDown stops or starts the server; wipe forgets its data (a restart
// without persistence).
func (s *server) setDown(down, wipe bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.SetDown(down, wipe)
	if wipe {
		s.truth.wipe(s.idx)
	}
}

// evict drops the lock key name (not its counter), as an evicting server
// under memory pressure does.
func (s *server) evict(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.mem.Inspect(bg, name)
	if err != nil || h.Token == "" {
		return
	}
	if ok, _ := s.mem.Release(bg, node.ReleaseArgs{Name: name, Token: h.Token}); ok {
		s.truth.evict(s.idx, h.Token)
	}
}

// log adds an event to the schedule's trace, if the server has one.
func (s *server) log(format string, args ...any) {
	if s.tr != nil {
		s.tr(format, args...)
	}
}
