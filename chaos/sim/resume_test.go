package sim

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// A paused server applies the requests queued while it was paused in the
// order they arrived, as a resumed redis-server reads its socket: the first
// queued acquire wins, and every later one is refused in its name. Applied
// in any other order, a later token wins in about 7 of 8 trials; 5 trials
// all in order by chance are 1 in 32768.
func TestResumedServerAppliesRequestsInArrivalOrder(t *testing.T) {
	for trial := range 5 {
		synctest.Test(t, func(t *testing.T) {
			s := &server{mem: memnode.New("n0"), truth: newTruth(1)}
			s.pause()
			const n = 8
			replies := make([]node.AcquireReply, n)
			tokens := make([]string, n)
			for i := range n {
				tokens[i] = fmt.Sprintf("%032x", i+1)
				go func() {
					replies[i], _ = s.acquire(node.AcquireArgs{Name: "k", Token: tokens[i], TTL: time.Second})
				}()
				synctest.Wait() // request i is queued before request i+1 is sent
			}
			s.resume()
			synctest.Wait()
			if !replies[0].Acquired {
				t.Fatalf("trial %d: the first queued acquire was refused (held by %s)", trial, replies[0].Holder)
			}
			for i := 1; i < n; i++ {
				if replies[i].Acquired || replies[i].Holder != node.ReleaseID(tokens[0]) {
					t.Fatalf("trial %d: queued acquire %d = %+v; want refused, held by the first", trial, i, replies[i])
				}
			}
		})
	}
}

// A holder whose acquire and release a resumed server applies at one fake
// instant held the key for a span of zero length: the ground truth counts
// it for a call around that instant, since a refusal applied between the
// two named a holder that really was there.
func TestTruthCountsZeroLengthSpans(t *testing.T) {
	tr := newTruth(3)
	at := time.Unix(1000, 0)
	tr.held[0]["a"] = []span{{at, at}}                                    // acquired and released at one instant
	tr.held[1]["a"] = []span{{at.Add(-time.Second), at.Add(time.Second)}} // held across the call
	if !tr.majorityHeld(2, at.Add(-time.Millisecond), at.Add(time.Millisecond)) {
		t.Fatal("a zero-length span within the call is not counted")
	}
	if tr.majorityHeld(2, at.Add(time.Millisecond), at.Add(2*time.Millisecond)) {
		t.Fatal("a zero-length span before the call is counted")
	}
}
