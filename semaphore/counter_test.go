package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/semaphore"
	"github.com/redis/go-redis/v9"
)

// admit is the obvious, unsafe design: each node admits a holder while
// fewer than N are registered with it.
var admit = redis.NewScript(`
if redis.call('SCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('SADD', KEYS[1], ARGV[1])
  return 1
end
return 0`)

// reach is the schedule of the package doc: with N = 2 on nodes A, B, C,
// holder X reaches only A and B, Y only B and C, Z only A and C (the
// others are partitioned away or time out).
var reach = [][]int{{0, 1}, {1, 2}, {0, 2}}

// A per-node counter compared against N admits N+1 holders, each on a
// majority, on real redis-server nodes: the design the package doc rejects.
func TestBrokenCounterExceedsN(t *testing.T) {
	rcs := redistest.StartT(t, 3).Clients()
	ctx := ctxFor(t, time.Minute)
	const n = 2
	holders := 0
	for h, nodes := range reach {
		yes := 0
		for _, i := range nodes {
			ok, err := admit.Run(ctx, rcs[i], []string{"counter-sem"}, h, n).Int()
			if err != nil {
				t.Fatal(err)
			}
			yes += ok
		}
		if yes >= 2 { // a majority of 3
			holders++
		}
	}
	if holders != n+1 {
		t.Fatalf("the per-node counter admitted %d holders, the schedule gives N+1 = %d", holders, n+1)
	}
}

// The same schedule against Semaphore: the third holder is refused.
func TestSemaphoreRefusesTheCounterSchedule(t *testing.T) {
	cl := redistest.StartT(t, 3)
	ctx := ctxFor(t, time.Minute)
	const n = 2
	name := uniqueName(t)
	var permits []*semaphore.Permit
	for h, nodes := range reach {
		var ns []node.Node
		for i, rc := range cl.Clients() {
			var nd node.Node = redisnode.NewNamed(cl.Addrs()[i], rc)
			if i != nodes[0] && i != nodes[1] {
				nd = unreachable{nd}
			}
			ns = append(ns, nd)
		}
		sem, err := semaphore.New(newClients(t, ns, 1)[0], name, n)
		if err != nil {
			t.Fatal(err)
		}
		p, err := sem.TryAcquire(ctx, 30*time.Second)
		switch {
		case h < n && err != nil:
			t.Fatalf("holder %d: %v", h, err)
		case h == n && !errors.Is(err, redlock.ErrNotAcquired):
			t.Fatalf("holder %d of N = %d: %v, want ErrNotAcquired", h+1, n, err)
		case err == nil:
			permits = append(permits, p)
		}
	}
	for _, p := range permits {
		_ = p.Release(ctx)
	}
}

// unreachable is a node this client cannot reach.
type unreachable struct{ node.Node }

var errUnreachable = errors.New("unreachable (test partition)")

func (unreachable) Identify(context.Context) (node.Identity, error) {
	return node.Identity{}, errUnreachable
}
func (unreachable) Acquire(context.Context, node.AcquireArgs) (node.AcquireReply, error) {
	return node.AcquireReply{}, errUnreachable
}
func (unreachable) Extend(context.Context, []node.ExtendArgs) ([]node.ExtendResult, error) {
	return nil, errUnreachable
}
func (unreachable) Release(context.Context, node.ReleaseArgs) (bool, error) {
	return false, errUnreachable
}
func (unreachable) RaiseFence(context.Context, string, string, uint64, time.Duration) (bool, error) {
	return false, errUnreachable
}
func (unreachable) Inspect(context.Context, string) (node.Holding, error) {
	return node.Holding{}, errUnreachable
}
func (unreachable) Scan(context.Context, node.ScanArgs) (node.ScanPage, error) {
	return node.ScanPage{}, errUnreachable
}
