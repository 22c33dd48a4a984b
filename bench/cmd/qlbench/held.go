package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/quorumlock/quorumlock/bench/internal/harness"
	"github.com/quorumlock/quorumlock/extend"
	"github.com/quorumlock/quorumlock/redlock"
)

// heldTTL is the TTL of the held locks; extensions run every third of it.
const heldTTL = lockTTL

// keeper holds count locks alive for a while and then lets them go.
type keeper interface {
	// hold acquires the keys and keeps them alive until stop is called.
	hold(ctx context.Context, keys []string) (lost *atomic.Int64, stop func(), err error)
	close()
}

// goroutineKeeper is auto-extension as users of redsync (and of any lock
// without a watchdog) write it: one goroutine per lock extending at a third
// of the TTL.
type goroutineKeeper struct {
	l      *locker
	extend func(ctx context.Context, h any) error
}

func (k *goroutineKeeper) close() { k.l.close() }

func (k *goroutineKeeper) hold(ctx context.Context, keys []string) (*atomic.Int64, func(), error) {
	hs, err := acquireAll(ctx, k.l, keys)
	if err != nil {
		return nil, nil, err
	}
	lost := new(atomic.Int64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			t := time.NewTicker(heldTTL / 3)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					ectx, cancel := context.WithTimeout(ctx, heldTTL/3)
					err := k.extend(ectx, h)
					cancel()
					if err != nil {
						lost.Add(1)
						return
					}
				}
			}
		})
	}
	stop := func() {
		close(done)
		wg.Wait()
		releaseAll(ctx, k.l, hs)
	}
	return lost, stop, nil
}

// acquireAll takes every key with 32 goroutines.
func acquireAll(ctx context.Context, l *locker, keys []string) ([]any, error) {
	hs := make([]any, len(keys))
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) || ctx.Err() != nil {
					return
				}
				h, err := l.acquire(ctx, keys[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				hs[i] = h
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	return hs, ctx.Err()
}

func releaseAll(ctx context.Context, l *locker, hs []any) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(hs) {
					return
				}
				if hs[i] != nil {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
					_ = l.release(rctx, hs[i])
					cancel()
				}
			}
		})
	}
	wg.Wait()
}

func newHeldKeepers(e *env, addrs []string, hooks map[string][]*harness.Counter) ([]string, map[string]keeper, error) {
	var names []string
	ks := map[string]keeper{}
	if e.want(libQL) {
		k, name, err := newQLKeeper(addrs, hooks)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		ks[name] = k
	}
	if e.want(libQLRueidis) {
		l, _, err := newQLRueidis(addrs, heldTTL, hooks[libQLRueidis])
		if err != nil {
			return nil, nil, err
		}
		names = append(names, libQLRueidis)
		ks[libQLRueidis] = &watchdogKeeper{l: l}
	}
	if e.want(libRS) {
		l, _ := newRS(libRS, addrs, heldTTL, hooks[libRS])
		ks[libRS] = &goroutineKeeper{l: l, extend: func(ctx context.Context, h any) error {
			ok, err := h.(*redsync.Mutex).ExtendContext(ctx)
			if err == nil && !ok {
				err = redsync.ErrExtendFailed
			}
			return err
		}}
		names = append(names, libRS)
	}
	return names, ks, nil
}

// watchdogKeeper keeps quorumlock locks alive with the library's own
// auto-extension (Lock.KeepAlive: one watchdog per Client that extends
// every due lock of a tick in one pipelined round per node).
type watchdogKeeper struct{ l *locker }

func (k *watchdogKeeper) close() { k.l.close() }

func (k *watchdogKeeper) hold(ctx context.Context, keys []string) (*atomic.Int64, func(), error) {
	hs, err := acquireAll(ctx, k.l, keys)
	if err != nil {
		return nil, nil, err
	}
	stops := make([]func(), len(hs))
	for i, h := range hs {
		stops[i] = h.(*redlock.Lock).KeepAlive()
	}
	lost := new(atomic.Int64)
	stop := func() {
		for i, h := range hs {
			if h.(*redlock.Lock).Err() != nil {
				lost.Add(1)
			}
			stops[i]()
		}
		releaseAll(ctx, k.l, hs)
	}
	return lost, stop, nil
}

// newQLKeeper keeps quorumlock locks alive with its watchdog.
func newQLKeeper(addrs []string, hooks map[string][]*harness.Counter) (keeper, string, error) {
	l, _, err := newQL(addrs, heldTTL, hooks[libQL])
	if err != nil {
		return nil, "", err
	}
	return &watchdogKeeper{l: l}, libQL, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCommands sums total_commands_processed over the nodes.
func serverCommands(ctx context.Context, e *env, n int) []int64 {
	out := make([]int64, n)
	for i, c := range e.cluster.Clients()[:n] {
		info, err := c.Info(ctx, "stats").Result()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				out[i], _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return out
}

// scenarioHeld: 1,000 and 10,000 locks held under auto-extension, 5 nodes;
// client CPU, commands and round trips per second to each node.
func scenarioHeld(e *env) error {
	const n = 5
	addrs := e.addrs[:n]
	libsHooks := map[string][]*harness.Counter{}
	for _, lib := range []string{libQL, libQLRueidis, libRS} {
		for range n {
			libsHooks[lib] = append(libsHooks[lib], &harness.Counter{})
		}
	}
	names, keepers, err := newHeldKeepers(e, addrs, libsHooks)
	if err != nil {
		return err
	}
	defer func() {
		for _, k := range keepers {
			k.close()
		}
	}()
	// The target is at most one round trip per node per watchdog tick.
	tick := extend.DefaultTick
	for _, count := range e.prof.heldCounts {
		cas := fmt.Sprintf("locks=%d/nodes=%d", count, n)
		for rep, name := range rotate(names, 0) {
			k := keepers[name]
			lib := name
			if _, own := libsHooks[name]; !own && strings.HasPrefix(name, libQL) {
				lib = libQL
			}
			keys := keyRing(fmt.Sprintf("h%d:%d:", count, rep), count)
			t0 := time.Now()
			lost, stop, err := k.hold(e.ctx, keys)
			if err != nil {
				return fmt.Errorf("%s: hold %d locks: %w", name, count, err)
			}
			progress("held %s %-10s: %d locks acquired in %s; measuring %s", cas, name, count, time.Since(t0).Round(time.Millisecond), e.prof.held)
			hooks := libsHooks[lib]
			c0, r0 := snapshot(hooks)
			s0 := serverCommands(e.ctx, e, n)
			cpu0, w0 := cpuTime(), time.Now()
			select {
			case <-time.After(e.prof.held):
			case <-e.ctx.Done():
			}
			cpu1, el := cpuTime(), time.Since(w0)
			c1, r1 := snapshot(hooks)
			s1 := serverCommands(e.ctx, e, n)
			stop() // counts lost locks, then releases them all
			var cmds, rounds, srv []float64
			for i := range n {
				cmds = append(cmds, float64(c1[i]-c0[i])/el.Seconds())
				rounds = append(rounds, float64(r1[i]-r0[i])/el.Seconds())
				srv = append(srv, float64(s1[i]-s0[i])/el.Seconds())
			}
			maxRounds := 0.0
			for _, r := range rounds {
				maxRounds = max(maxRounds, r)
			}
			cpu := (cpu1 - cpu0).Seconds() / el.Seconds()
			m := []harness.Metric{
				{Unit: "ns/op", Value: float64(el.Nanoseconds())},
				{Unit: "cpu-cores", Value: cpu},
				{Unit: "cmds/s/node", Value: harness.Median(cmds)},
				{Unit: "rounds/s/node", Value: harness.Median(rounds)},
				{Unit: "server-cmds/s/node", Value: harness.Median(srv)},
				{Unit: "rounds/node/tick", Value: maxRounds * tick.Seconds()},
				{Unit: "lost", Value: float64(lost.Load())},
			}
			e.add("Held", cas, name, harness.Rep{N: 1, Metrics: m})
			progress("held %s %-10s: cpu %.2f cores, %.0f cmds/s/node, %.0f rounds/s/node (%.1f rounds/node/tick), server %.0f cmds/s/node, lost %d",
				cas, name, cpu, harness.Median(cmds), harness.Median(rounds), maxRounds*tick.Seconds(), harness.Median(srv), lost.Load())
			if e.ctx.Err() != nil {
				return e.ctx.Err()
			}
		}
	}
	return nil
}

// serverCPU sums used_cpu_user + used_cpu_sys of the first n nodes.
func serverCPU(ctx context.Context, e *env, n int) time.Duration {
	var total float64
	for _, c := range e.cluster.Clients()[:n] {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			line = strings.TrimSpace(line)
			for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					f, _ := strconv.ParseFloat(v, 64)
					total += f
				}
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

func snapshot(hooks []*harness.Counter) (cmds, rounds []int64) {
	for _, h := range hooks {
		c, r := h.Snapshot()
		cmds, rounds = append(cmds, c), append(rounds, r)
	}
	return cmds, rounds
}
