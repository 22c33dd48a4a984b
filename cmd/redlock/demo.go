package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/defaults"
	"github.com/quorumlock/quorumlock/internal/quorum"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/statuslock"
)

// demoConfig is what the demo's flags set.
type demoConfig struct {
	duration time.Duration
	replicas int
	services int
	ttl      time.Duration
	nodes    nodeArgs
	metrics  string // --metrics-addr: serve /metrics there while running
}

var demoServices = []string{"billing", "search", "mailer", "ledger", "auth", "media", "geo", "chat"}

func parseDemo(args []string, stdout io.Writer) (*demoConfig, error) {
	c := &demoConfig{}
	fs := newFlagSet("demo")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of the run")
	fs.IntVar(&c.replicas, "replicas", 3, "simulated replicas")
	fs.IntVar(&c.services, "services", 3, "services whose status is locked")
	fs.DurationVar(&c.ttl, "ttl", 500*time.Millisecond, "status lock TTL")
	nodesFlags(fs, &c.nodes) // default: 5 memory nodes; REDLOCK_NODES is not read
	fs.StringVar(&c.metrics, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics while running (e.g. :9464)")
	if err := parse(fs, "demo", usageDemo, args, stdout); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, usageErr("demo", "unexpected argument %q", fs.Arg(0))
	case c.duration < time.Second:
		return nil, usageErr("demo", "--duration %s is shorter than 1s", c.duration)
	case c.replicas < 1 || c.replicas > 50:
		return nil, usageErr("demo", "--replicas %d outside 1..50", c.replicas)
	case c.services < 1 || c.services > len(demoServices):
		return nil, usageErr("demo", "--services %d outside 1..%d", c.services, len(demoServices))
	case c.ttl < 100*time.Millisecond:
		return nil, usageErr("demo", "--ttl %s is shorter than 100ms", c.ttl)
	}
	return c, nil
}

// demoBackend is where the demo's locks live: embedded memory nodes (which
// can be stopped) or real Redis nodes (which the demo does not stop).
type demoBackend struct {
	nodes  []node.Node
	memory []*memnode.Node // nil on real nodes
	label  string
	prefix string // the lock clients' key prefix
	close  func()
}

// newDemoBackend runs the demo on embedded memory nodes unless --nodes
// names real ones. It does not read REDLOCK_NODES: an operator who
// exported it for cron would otherwise run the demo on production nodes.
// On real nodes every key gets a prefix of its own, "demo:RUN:", and
// close removes them all.
func newDemoBackend(ctx context.Context, c *demoConfig, stdout io.Writer) (*demoBackend, error) {
	if c.nodes.list == "" {
		b := &demoBackend{label: "5 embedded memory nodes", prefix: defaults.KeyPrefix, close: func() {}}
		for i := range 5 {
			m := memnode.New(fmt.Sprintf("n%d", i+1))
			b.memory = append(b.memory, m)
			b.nodes = append(b.nodes, m)
		}
		if os.Getenv(nodesEnv) != "" {
			fmt.Fprintf(stdout, "redlock demo: %s ignored; pass --nodes to run on real nodes\n", nodesEnv)
		}
		return b, nil
	}
	r, err := connect(ctx, "demo", c.nodes)
	if err != nil {
		return nil, err
	}
	b := &demoBackend{nodes: r.nodes, prefix: "demo:" + randomHex() + ":"}
	b.label = fmt.Sprintf("%d Redis nodes, keys under %s", len(r.nodes), b.prefix)
	b.close = func() {
		defer r.Close()
		n, err := removeKeys(context.WithoutCancel(ctx), r.clients, b.prefix)
		if err != nil {
			fmt.Fprintf(stdout, "cleanup: removed %d keys under %s, then: %v (the rest expires within a day)\n", n, b.prefix, err)
			return
		}
		fmt.Fprintf(stdout, "cleanup: removed %d keys under %s\n", n, b.prefix)
	}
	return b, nil
}

// removeKeys deletes every key that starts with prefix (no glob
// characters in it) on every node, and returns how many it deleted.
func removeKeys(ctx context.Context, clients []*redis.Client, prefix string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	removed := 0
	var errs []error
	for _, c := range clients {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			n, err := c.Unlink(ctx, iter.Val()).Result()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.Options().Addr, err))
				break
			}
			removed += int(n)
		}
		if err := iter.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Options().Addr, err))
		}
	}
	return removed, errors.Join(errs...)
}

func runDemo(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseDemo(args, stdout)
	if err != nil {
		return err
	}
	be, err := newDemoBackend(ctx, c, stdout)
	if err != nil {
		return err
	}
	defer be.close()

	services := demoServices[:c.services]
	st := newDemoStats(services, statuslock.DefaultKeyPrefix)
	if c.metrics != "" {
		stopMetrics, err := serveDemoMetrics(c.metrics, st, stdout)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	w := newWorld(services, statuslock.NewMemoryStore(), st, c.ttl)
	out := newProgress(stdout, st, w, c.duration)

	replicas, closeReplicas, err := newDemoReplicas(c, be, st, w)
	defer closeReplicas()
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "redlock demo: %s on %s (quorum %d), %d replicas x (api, worker, reconciler), %d services, status lock ttl %s\n",
		c.duration, be.label, quorum.Of(len(be.nodes)), c.replicas, c.services, c.ttl)

	runCtx, stop := context.WithTimeout(ctx, c.duration)
	defer stop()
	start := time.Now()
	w.start, w.drainAt = start, start.Add(c.duration*3/4)
	var wg sync.WaitGroup
	for _, r := range replicas {
		if err := r.startReconciler(runCtx, services, c.ttl); err != nil {
			return exitf(1, "redlock demo: %v", err)
		}
		wg.Go(func() { r.api(runCtx) })
		wg.Go(func() { r.worker(runCtx) })
	}
	demoFaults(ctx, runCtx, &wg, c.duration, replicas[0], services[0], be, st, out)
	out.run(runCtx)
	wg.Wait()
	for _, r := range replicas {
		r.stopReconciler()
	}
	out.finish()

	sum := st.summary(w, time.Since(start), len(be.nodes))
	fmt.Fprint(stdout, sum.text)
	if !sum.passed {
		return exitf(1, "redlock demo: safety check failed")
	}
	return nil
}

// newDemoReplicas makes the demo's replicas, each with a lock client of its
// own; closeAll closes the clients made, also when it fails.
func newDemoReplicas(c *demoConfig, be *demoBackend, st *demoStats, w *world) (replicas []*replica, closeAll func(), err error) {
	var clients []*redlock.Client
	closeAll = func() {
		for _, client := range slices.Backward(clients) {
			client.Close()
		}
	}
	replicas = make([]*replica, c.replicas)
	for i := range replicas {
		client, err := redlock.New(be.nodes, redlock.WithObserver(st), redlock.WithKeyPrefix(be.prefix))
		if err != nil {
			return nil, closeAll, usageErr("demo", "%v", err)
		}
		clients = append(clients, client)
		locker, err := statuslock.New(client, statuslock.WithTTL(c.ttl))
		if err != nil {
			return nil, closeAll, usageErr("demo", "%v", err)
		}
		replicas[i] = &replica{id: i + 1, locker: locker, world: w}
	}
	return replicas, closeAll, nil
}

// demoFaults starts the demo's faults in wg: first's holder of service
// paused past its TTL at a quarter of the run, one node stopped at half
// of it.
func demoFaults(ctx, runCtx context.Context, wg *sync.WaitGroup, duration time.Duration, first *replica, service string, be *demoBackend, st *demoStats, out *progress) {
	wg.Go(func() {
		if sleep(runCtx, duration/4) {
			first.pausedHolder(ctx, service, out)
		}
	})
	wg.Go(func() {
		if !sleep(runCtx, duration/2) {
			return
		}
		if be.memory == nil {
			out.event("node stop skipped: the demo cannot stop a real Redis node (stop one yourself to see the quorum ride it out)")
			return
		}
		last := be.memory[len(be.memory)-1]
		last.SetDown(true, false)
		st.nodeDown()
		out.event(fmt.Sprintf("node %s stopped: %d of %d nodes up, quorum %d", last.Name(), len(be.nodes)-1, len(be.nodes), quorum.Of(len(be.nodes))))
	})
}

// sleep waits d unless ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
