package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/lockdesc"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/rwlock"
)

// On 5 real nodes: 3 coordinators trigger one consolidation per round
// exactly once (20 rounds; the program runs 50), the policy and a shared
// lock without a read-write lock are refused with their errors, two shared
// locks through rwlock are held together and keep a writer out, Find answers the seed's two queries
// and Metrics counts the held locks by subject.
func TestLockManager(t *testing.T) {
	env := seed.StartT(t, 5, false)
	out, err := run(context.Background(), func(owner string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(owner))
	}, func() (*rwlock.Client, error) { return rwlock.New(env.Nodes()) }, 3, 20)
	if err != nil {
		t.Fatal(err)
	}
	for r, n := range out.TriggersPerRound {
		if n != 1 {
			t.Errorf("round %d: %d triggers", r, n)
		}
	}
	if !errors.Is(out.PolicyRefusal, lockdesc.ErrPolicy) {
		t.Errorf("10-minute consolidation: %v, want ErrPolicy", out.PolicyRefusal)
	}
	if !errors.Is(out.SharedRefusal, lockdesc.ErrKindUnsupported) {
		t.Errorf("shared lock without a read-write lock: %v, want ErrKindUnsupported", out.SharedRefusal)
	}
	if out.Readers != 2 || !errors.Is(out.WriterWhileRead, redlock.ErrNotAcquired) || out.WriterAfter != nil {
		t.Errorf("through rwlock: %d readers, writer while they read %v, after %v", out.Readers, out.WriterWhileRead, out.WriterAfter)
	}
	if len(out.ConsolidationLocks) != 2 || len(out.FileSetLocks) != 4 {
		t.Errorf("consolidation locks %v, file set locks %v", out.ConsolidationLocks, out.FileSetLocks)
	}
	if got := fmt.Sprint(out.Metrics); got != "map[audit:1 consolidation-job:2 page:4]" {
		t.Errorf("metrics %s", got)
	}
	if len(out.Errors) != 0 {
		t.Errorf("errors %v", out.Errors)
	}
}
