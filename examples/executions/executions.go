package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/sqlfence"
)

// schema: scheduled deviations, their execution version (the fence of the
// lock that published them), and the uploads (the external side effect, one
// row per upload).
const schema = `
CREATE TABLE deviations (
	id                BIGINT PRIMARY KEY,
	status            TEXT NOT NULL DEFAULT 'scheduled',
	published_by      TEXT,
	execution_version BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE uploads (deviation_id BIGINT NOT NULL, worker TEXT NOT NULL);`

func setup(ctx context.Context, db *sql.DB, items int) error {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT INTO deviations (id) SELECT generate_series(1, $1)`, items)
	return err
}

// stats is what the workers did.
type stats struct {
	Published int             // deviations this run published
	Skipped   int             // lock held by another worker, or already published
	Latencies []time.Duration // of every lock attempt
	Errors    []error
	ByWorker  map[string]int
	mu        sync.Mutex
}

// worker publishes every deviation it can lock, in its own random order:
// under the lock "deviation:<id>" it reads the status, uploads once if still
// scheduled, and marks it published with execution_version = the lock's
// fence, through sqlfence (a late holder's write is refused).
func worker(ctx context.Context, db *sql.DB, client *redlock.Client, name string, items int, seed uint64, st *stats) {
	table, _ := sqlfence.New("deviations", sqlfence.WithFenceColumn("execution_version"))
	order := rand.New(rand.NewPCG(seed, 1)).Perm(items)
	for _, i := range order {
		id := int64(i + 1)
		start := time.Now()
		lock, err := client.TryAcquire(ctx, fmt.Sprintf("deviation:%d", id), 10*time.Second)
		st.observe(time.Since(start))
		if errors.Is(err, redlock.ErrNotAcquired) {
			st.add(func() { st.Skipped++ })
			continue
		}
		if err != nil {
			st.add(func() { st.Errors = append(st.Errors, err) })
			continue
		}
		err = publish(ctx, db, table, lock, id, name, st)
		if rerr := lock.Release(context.WithoutCancel(ctx)); err == nil {
			err = rerr
		}
		if err != nil {
			st.add(func() { st.Errors = append(st.Errors, err) })
		}
	}
}

func publish(ctx context.Context, db *sql.DB, table *sqlfence.Table, lock *redlock.Lock, id int64, name string, st *stats) error {
	var status string
	if err := db.QueryRowContext(ctx, `SELECT status FROM deviations WHERE id = $1`, id).Scan(&status); err != nil {
		return err
	}
	if status != "scheduled" {
		st.add(func() { st.Skipped++ })
		return nil
	}
	// The upload (the external call the lock protects).
	if _, err := db.ExecContext(ctx, `INSERT INTO uploads (deviation_id, worker) VALUES ($1, $2)`, id, name); err != nil {
		return err
	}
	if err := table.Update(ctx, db, id, lock.Fence(),
		sqlfence.Set{Column: "status", Value: "published"}, sqlfence.Set{Column: "published_by", Value: name}); err != nil {
		return err
	}
	st.add(func() { st.Published++; st.ByWorker[name]++ })
	return nil
}

func (st *stats) add(f func()) { st.mu.Lock(); f(); st.mu.Unlock() }

func (st *stats) observe(d time.Duration) { st.add(func() { st.Latencies = append(st.Latencies, d) }) }

// percentile of the lock attempts' latencies (nearest rank).
func (st *stats) percentile(p float64) time.Duration {
	l := slices.Clone(st.Latencies)
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	i := int(p*float64(len(l))+0.999999) - 1
	return l[max(0, min(i, len(l)-1))]
}

// check counts uploads per deviation and compares the execution versions
// with the fences: it returns how many deviations were uploaded exactly once
// and are published with a non-zero execution version.
type check struct {
	Items, UploadedOnce, UploadedTwice, NotPublished, VersionZero int
}

func verify(ctx context.Context, db *sql.DB) (check, error) {
	var c check
	err := db.QueryRowContext(ctx, `
SELECT count(*),
       count(*) FILTER (WHERE u.n = 1),
       count(*) FILTER (WHERE u.n > 1),
       count(*) FILTER (WHERE d.status <> 'published'),
       count(*) FILTER (WHERE d.execution_version = 0)
FROM deviations d LEFT JOIN (SELECT deviation_id, count(*) AS n FROM uploads GROUP BY deviation_id) u ON u.deviation_id = d.id`).
		Scan(&c.Items, &c.UploadedOnce, &c.UploadedTwice, &c.NotPublished, &c.VersionZero)
	return c, err
}

// run starts workers on nodes and db and returns the stats and the check.
func run(ctx context.Context, db *sql.DB, newClient func(name string) (*redlock.Client, error), workers, items int) (*stats, check, error) {
	if err := setup(ctx, db, items); err != nil {
		return nil, check{}, err
	}
	st := &stats{ByWorker: map[string]int{}}
	var wg sync.WaitGroup
	for w := range workers {
		name := fmt.Sprintf("worker-%d", w+1)
		c, err := newClient(name)
		if err != nil {
			return nil, check{}, err
		}
		defer c.Close()
		wg.Go(func() { worker(ctx, db, c, name, items, uint64(w), st) })
	}
	wg.Wait()
	c, err := verify(ctx, db)
	return st, c, err
}
