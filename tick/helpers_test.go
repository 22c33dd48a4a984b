package tick_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/tick"
)

// replicas is k clients, each a replica, sharing n real redis-server nodes.
func replicas(t *testing.T, n, k int, opts ...redlock.Option) ([]*redlock.Client, []*redis.Client) {
	t.Helper()
	cl := redistest.StartT(t, n)
	return clientsOn(t, nodesOf(cl), k, opts...), cl.Clients()
}

func clientsOn(t *testing.T, nodes []node.Node, k int, opts ...redlock.Option) []*redlock.Client {
	t.Helper()
	var cs []*redlock.Client
	for i := range k {
		o := append([]redlock.Option{redlock.WithNodeTimeout(2 * time.Second), redlock.WithOwner(fmt.Sprintf("replica-%d", i))}, opts...)
		c, err := redlock.New(nodes, o...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return cs
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// period is the tick period of the tests: the clocks they inject name
// ticks k*period; nothing waits for it.
const period = time.Hour

func clockAt(t time.Time) tick.Option { return tick.WithClock(func() time.Time { return t }) }

func tickTime(k int) time.Time { return time.Unix(0, 0).Add(time.Duration(k+500000) * period) }

// counter counts the runs of each tick.
type counter struct {
	mu   sync.Mutex
	runs map[string]int
}

func newCounter() *counter { return &counter{runs: map[string]int{}} }

func (c *counter) job(tickName string) func(context.Context) error {
	return func(context.Context) error {
		c.mu.Lock()
		c.runs[tickName]++
		c.mu.Unlock()
		return nil
	}
}

func (c *counter) count(tickName string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[tickName]
}

// fire runs the job's tick at clocks[i] on replica i, all together, and
// returns their results.
func fire(t *testing.T, ctx context.Context, cs []*redlock.Client, job string, clocks []time.Time, fn func(context.Context) error, opts ...tick.Option) []tick.Result {
	t.Helper()
	res := make([]tick.Result, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(len(cs))
	start := make(chan struct{})
	for i, c := range cs {
		wg.Go(func() {
			ready.Done()
			<-start
			res[i], errs[i] = tick.Run(ctx, c, job, tick.Every(period), fn, append([]tick.Option{clockAt(clocks[i])}, opts...)...)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	return res
}

// ranOnce checks that exactly one result ran and the others say why not.
func ranOnce(t *testing.T, runs int, res []tick.Result) {
	t.Helper()
	ran := 0
	for _, r := range res {
		if r.Ran {
			ran++
			continue
		}
		if r.Status != tick.Running && r.Status != tick.Done {
			t.Errorf("not run with status %v: %s", r.Status, r)
		}
		if r.Record.Runner == "" {
			t.Errorf("not run, and no runner reported: %s", r)
		}
	}
	if runs != 1 || ran != 1 {
		t.Fatalf("tick %s: the job ran %d times, %d results say ran: %v", res[0].Tick, runs, ran, res)
	}
}

var jobSeq atomic.Int64

func jobName(t *testing.T) string { return fmt.Sprintf("job-%d", jobSeq.Add(1)) }

func memoryNodes() []node.Node {
	return []node.Node{memnode.New("a"), memnode.New("b"), memnode.New("c")}
}
