package main

import (
	"context"
	"testing"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
)

// 5 workers race over the same items on 5 real nodes and a real PostgreSQL:
// each item is uploaded exactly once and published with its lock's fence as
// execution version. 40 items here; the program runs 100.
func TestEachItemPublishedOnce(t *testing.T) {
	env := seed.StartT(t, 5, true)
	ctx := context.Background()
	newClient := func(name string) (*redlock.Client, error) {
		return redlock.New(env.Nodes(), redlock.WithOwner(name))
	}
	st, c, err := run(ctx, env.DB, newClient, 5, 40)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; p50 %v p99 %v", c, st.percentile(0.5), st.percentile(0.99))
	if c.Items != 40 || c.UploadedOnce != 40 || c.UploadedTwice != 0 || c.NotPublished != 0 || c.VersionZero != 0 || len(st.Errors) != 0 {
		t.Fatalf("check %+v, errors %v", c, st.Errors)
	}
	if st.Published != 40 || len(st.Latencies) != 5*40 {
		t.Fatalf("published %d, attempts %d", st.Published, len(st.Latencies))
	}
	// The execution version is the fence of the lock that published: the
	// fence counter of the item's key on the nodes is at least it.
	var id, version int64
	if err := env.DB.QueryRow(`SELECT id, execution_version FROM deviations ORDER BY id LIMIT 1`).Scan(&id, &version); err != nil {
		t.Fatal(err)
	}
	client, _ := newClient("inspector")
	defer client.Close()
	info, err := client.Inspect(ctx, "deviation:1")
	if err != nil || info.Fence < uint64(version) || version <= 0 {
		t.Fatalf("deviation %d: execution version %d, the nodes' fence %d (%v)", id, version, info.Fence, err)
	}
}
