package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/lockdesc"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// policies of the seed's lock manager: consolidation triggers are short and
// exclusive, audits exclusive, page extraction at most 5 minutes.
var policies = []lockdesc.Policy{
	{Subject: "consolidation-job", Predicate: "triggering", MaxTTL: 2 * time.Minute, Kinds: []lockdesc.Kind{lockdesc.Exclusive}},
	{Subject: "page", MaxTTL: 5 * time.Minute},
	{Subject: "audit", Kinds: []lockdesc.Kind{lockdesc.Exclusive}},
}

func consolidation(fileSet, docType string) lockdesc.Descriptor {
	return lockdesc.Descriptor{Subject: "consolidation-job", Predicate: "triggering", Resources: []string{fileSet, docType}}
}

func page(fileSet, doc string, n int) lockdesc.Descriptor {
	return lockdesc.Descriptor{Subject: "page", Predicate: "extracting", Resources: []string{fileSet, doc, fmt.Sprint(n)}}
}

// outcome is what the run saw.
type outcome struct {
	Rounds, Triggered  int            // consolidation rounds, and triggers that ran
	TriggersPerRound   []int          // per round
	PolicyRefusal      error          // a 10-minute consolidation lock
	SharedRefusal      error          // a shared lock on a Manager without a read-write lock
	Readers            int            // shared schema locks held at once through rwlock
	WriterWhileRead    error          // an exclusive schema lock tried while they hold
	WriterAfter        error          // the same once they released
	ConsolidationLocks []string       // Find: all consolidation locks
	FileSetLocks       []string       // Find: all locks of file set fs-abc123
	Metrics            map[string]int // held locks per subject
	Errors             []error
}

// run: coordinators (one Manager each, as separate processes would have)
// trigger the same consolidation at the same moment, rounds times, each with
// a single attempt; then page extractions hold locks, a policy refuses a
// request, a shared lock is refused, and the held locks are found by pattern
// and counted by subject.
func run(ctx context.Context, newClient func(owner string) (*redlock.Client, error), newRW func() (*rwlock.Client, error), coordinators, rounds int) (*outcome, error) {
	var managers []*lockdesc.Manager
	for i := range coordinators {
		c, err := newClient(fmt.Sprintf("coordinator-%d", i+1))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		m, err := lockdesc.NewManager(c, lockdesc.WithPolicy(policies...))
		if err != nil {
			return nil, err
		}
		managers = append(managers, m)
	}
	out := &outcome{Rounds: rounds, TriggersPerRound: make([]int, rounds)}
	var mu sync.Mutex
	d := consolidation("fs-abc123", "VA-IRRL-LIN")
	for r := range rounds {
		var attempted, done sync.WaitGroup
		attempted.Add(len(managers))
		done.Add(len(managers))
		start := make(chan struct{})
		for _, m := range managers {
			go func() {
				defer done.Done()
				<-start
				h, err := m.TryAcquire(ctx, d, time.Minute)
				attempted.Done()
				if errors.Is(err, redlock.ErrNotAcquired) {
					return // another coordinator triggers it
				}
				if err != nil {
					mu.Lock()
					out.Errors = append(out.Errors, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				out.TriggersPerRound[r]++
				out.Triggered++
				mu.Unlock()
				attempted.Wait() // the trigger outlasts the coordinators' skew
				_ = h.Release(context.WithoutCancel(ctx))
			}()
		}
		close(start)
		done.Wait()
	}

	m := managers[0]
	var held []*redlock.Lock
	defer func() {
		for _, h := range held {
			_ = h.Release(context.WithoutCancel(ctx))
		}
	}()
	hold := func(d lockdesc.Descriptor, ttl time.Duration) {
		h, err := m.Acquire(ctx, d, ttl)
		if err != nil {
			out.Errors = append(out.Errors, err)
			return
		}
		held = append(held, h)
	}
	for n := 1; n <= 3; n++ {
		hold(page("fs-abc123", "doc-456", n), time.Minute)
	}
	hold(page("fs-def456", "doc-9", 1), time.Minute)
	hold(consolidation("fs-abc123", "VA-IRRL-LIN"), time.Minute)
	hold(consolidation("fs-def456", "VA-IRRL-LIN"), time.Minute)
	hold(lockdesc.Descriptor{Subject: "audit", Predicate: "reconciling", Resources: []string{"status"}}, time.Minute)

	_, out.PolicyRefusal = m.Acquire(ctx, consolidation("fs-xyz", "VA-IRRL-LIN"), 10*time.Minute)
	schemaRead := lockdesc.Descriptor{Kind: lockdesc.Shared, Subject: "schema", Predicate: "access", Resources: []string{"tenant-123", "VA-IRRL-LIN"}}
	_, out.SharedRefusal = m.Acquire(ctx, schemaRead, 5*time.Second)
	if err := sharedLocks(ctx, newClient, newRW, schemaRead, out); err != nil {
		return nil, err
	}

	keys := func(p lockdesc.Pattern) ([]string, error) {
		found, err := m.Find(ctx, p)
		var ks []string
		for _, f := range found {
			ks = append(ks, f.Info.Key+" ("+f.Info.Owner+")")
		}
		sort.Strings(ks)
		return ks, err
	}
	var err error
	if out.ConsolidationLocks, err = keys(lockdesc.Pattern{Subject: "consolidation-job"}); err != nil {
		return nil, err
	}
	if out.FileSetLocks, err = keys(lockdesc.Pattern{Resources: []string{"fs-abc123"}}); err != nil {
		return nil, err
	}
	metrics, err := m.Metrics(ctx, lockdesc.Pattern{})
	if err != nil {
		return nil, err
	}
	out.Metrics = map[string]int{}
	for subj, s := range metrics {
		out.Metrics[subj] = s.Count
	}
	return out, nil
}

// sharedLocks: schema locks through a Manager whose RWLocker is package
// rwlock: readers share, a writer waits for them.
func sharedLocks(ctx context.Context, newClient func(owner string) (*redlock.Client, error), newRW func() (*rwlock.Client, error), read lockdesc.Descriptor, out *outcome) error {
	rw, err := newRW()
	if err != nil {
		return err
	}
	defer rw.Close()
	c, err := newClient("schema-coordinator")
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := lockdesc.NewManager(c, lockdesc.WithRWLocker(rw))
	if err != nil {
		return err
	}
	write := read
	write.Kind = lockdesc.Exclusive
	var readers []*redlock.Lock
	for range 2 {
		l, err := m.TryAcquire(ctx, read, 10*time.Second)
		if err != nil {
			return fmt.Errorf("reader: %w", err)
		}
		readers = append(readers, l)
	}
	out.Readers = len(readers)
	if w, err := m.TryAcquire(ctx, write, 10*time.Second); err == nil {
		_ = w.Release(ctx)
	} else {
		out.WriterWhileRead = err
	}
	for _, l := range readers {
		_ = l.Release(ctx)
	}
	w, err := m.TryAcquire(ctx, write, 10*time.Second)
	out.WriterAfter = err
	if err == nil {
		_ = w.Release(ctx)
	}
	return nil
}
