package chaos

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// svRWNear is how much sooner the writer and the reader of the
// writer-reader rounds reach their near nodes than the other side's.
const svRWNear = 2 * time.Millisecond

// svRWCounts is what the writer-reader rounds of split-vote found.
type svRWCounts struct {
	rounds, one, none, both, gaveUp int
}

// runSVWriterReader races a writer (TryLock, near nodes 0 and 1) and a
// reader (TryRLock, near nodes 2 and 3) of package rwlock on a fresh key
// per round, with node 4 out of reach of both (its link cut): each takes
// its two near nodes first, a 2-2 split. Exactly one must run; the other
// must be told the lock is held, not give up on split votes (it did when
// a writer refused by readers was told of a holder "readers" that sorts
// after every id, so both could believe they won the tie). Both winners
// at once are recorded as overlaps.
func runSVWriterReader(ctx context.Context, e *Env, rounds int, f *Findings) (svRWCounts, error) {
	cut, err := closedAddr()
	if err != nil {
		return svRWCounts{}, err
	}
	addrs := append(e.Cluster.Addrs()[:4:4], cut)
	far := func(near ...int) []time.Duration {
		d := []time.Duration{svRWNear, svRWNear, svRWNear, svRWNear, 0}
		for _, i := range near {
			d[i] = 0
		}
		return d
	}
	var sides [2]*rwlock.Client
	var rcs []*redis.Client
	defer func() {
		for _, c := range sides {
			if c != nil {
				_ = c.Close()
			}
		}
		for _, rc := range rcs {
			_ = rc.Close()
		}
	}()
	for i, near := range [][]int{{0, 1}, {2, 3}} {
		cs := directClients(addrs, 4, far(near...))
		rcs = append(rcs, cs...)
		if sides[i], err = rwlock.New(newNodes(cs)); err != nil {
			return svRWCounts{}, err
		}
	}
	var n svRWCounts
	base := time.Now().UnixNano()
	for round := range rounds {
		if ctx.Err() != nil {
			break
		}
		outs := raceSides(ctx, e, sides, fmt.Sprintf("sv-rw-%d-%d", base, round))
		n.count(outs, f)
	}
	return n, nil
}

// svSideOut is one side's attempt in a writer-reader round.
type svSideOut struct {
	kind string
	cs   CS
}

// raceSides starts TryLock (sides[0]) and TryRLock (sides[1]) on key at
// once; a winner holds until both attempts returned, then releases.
func raceSides(ctx context.Context, e *Env, sides [2]*rwlock.Client, key string) [2]svSideOut {
	var outs [2]svSideOut
	var attempted, finished sync.WaitGroup
	start, release := make(chan struct{}), make(chan struct{})
	tries := [2]func(context.Context, string, time.Duration) (*redlock.Lock, error){sides[0].TryLock, sides[1].TryRLock}
	for i, try := range tries {
		attempted.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			<-start
			acqStart := e.Clock.Now()
			l, err := try(ctx, key, splitVoteTTL)
			outs[i].kind = attemptKind(err)
			attempted.Done()
			if err != nil {
				return
			}
			outs[i].cs = CS{Client: i, Fence: l.Fence(), AcqStart: acqStart, AcqEnd: e.Clock.Now()}
			outs[i].cs.Start = outs[i].cs.AcqEnd
			<-release
			time.Sleep(time.Millisecond)
			outs[i].cs.End = e.Clock.Now()
			outs[i].cs.ValidEnd = e.Clock.At(l.ValidUntil())
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			outs[i].cs.ReleaseOK = l.Release(rctx) == nil
			cancel()
		}()
	}
	close(start)
	attempted.Wait()
	close(release)
	finished.Wait()
	return outs
}

func (n *svRWCounts) count(outs [2]svSideOut, f *Findings) {
	n.rounds++
	var css []CS
	for _, o := range outs {
		if o.kind == kindAcquired {
			o.cs.ID = len(css)
			css = append(css, o.cs)
			f.Acquisitions++
		} else {
			f.AcquireErrors["rw "+o.kind]++
		}
		if o.kind == kindSplit {
			n.gaveUp++
		}
	}
	f.CriticalSections += len(css)
	switch len(css) {
	case 0:
		n.none++
	case 1:
		n.one++
	default:
		n.both++
		f.Overlaps = append(f.Overlaps, checkOverlaps(css)...)
	}
}

// closedAddr is a loopback address where nothing listens: a node whose
// link is cut answers every request with an error at once.
func closedAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}
