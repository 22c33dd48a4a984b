package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/sqlfence"
)

// schema: the tasks table of the seed (leased_by, lease_expiry, version)
// with the fence column, and one row per completion (to count them).
const schema = `
CREATE TABLE tasks (
	id           BIGINT PRIMARY KEY,
	state        TEXT NOT NULL DEFAULT 'pending',
	leased_by    TEXT,
	lease_expiry TIMESTAMPTZ,
	version      BIGINT NOT NULL DEFAULT 0,
	completed_by TEXT,
	lock_fence   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX tasks_lease ON tasks (state, lease_expiry);
CREATE TABLE completions (task_id BIGINT NOT NULL, worker TEXT NOT NULL);`

// config of a run.
type config struct {
	Workers, Tasks int
	LeaseTTL       time.Duration // the lock's TTL; the row's lease_expiry mirrors it
	KillAfter      int           // the victim (worker-1) is killed holding its KillAfter-th task
}

// report is what happened.
type report struct {
	Completed     int            // completions recorded
	DistinctTasks int            // tasks with a completion
	Duplicates    int            // tasks completed more than once
	ByWorker      map[string]int // completions per worker
	Killed        int64          // the task the victim held when killed
	RecoveredBy   string         // who completed it
	RecoveredFrom string         // the previous lessee the recovering worker found in the row
	TookOverOwner string         // the previous holder redlock's TookOver reported ("" if none)
	LateVersion   error          // the victim's late version-checked completion
	LateFence     error          // the victim's late fenced write
	LateRowsWhere string         // state of the killed task after the late writes
	Recoveries    int            // leases of a task whose previous lease had expired
	Retried       int            // lock attempts retried after ErrQuorumUnreachable
	Errors        []error
	mu            sync.Mutex
}

func (r *report) add(f func()) { r.mu.Lock(); f(); r.mu.Unlock() }

// victimState is the victim's lease at the moment it was killed.
type victimState struct {
	id, version int64
	fence       uint64
}

// leased is a task a worker holds.
type leased struct {
	id, version int64
	lock        *redlock.Lock
	stop        func() // ends the lock's keep-alive without releasing it
}

// lease picks a pending task whose lease is free or expired, takes its lock
// (the lease: TryAcquire, kept alive while the worker runs) and records the
// lease in the row under the lock's fence. nil, nil: nothing left to lease.
func lease(ctx context.Context, db *sql.DB, client *redlock.Client, name string, ttl time.Duration, rng *rand.Rand, rep *report) (*leased, error) {
	for {
		rows, err := db.QueryContext(ctx, `SELECT id FROM tasks WHERE state = 'pending'
			AND (lease_expiry IS NULL OR lease_expiry < now()) ORDER BY id LIMIT 16`)
		if err != nil {
			return nil, err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) == 0 {
			var pending int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE state = 'pending'`).Scan(&pending); err != nil || pending == 0 {
				return nil, err
			}
			time.Sleep(ttl / 10) // leased elsewhere: wait for a completion or an expiry
			continue
		}
		id := ids[rng.IntN(len(ids))]
		lock, err := client.TryAcquire(ctx, fmt.Sprintf("task:%d", id), ttl)
		if errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrQuorumUnreachable) {
			// Leased by another worker, or nodes too slow this time (a busy
			// machine): back off a little and pick again.
			if errors.Is(err, redlock.ErrQuorumUnreachable) {
				rep.add(func() { rep.Retried++ })
			}
			time.Sleep(time.Duration(rng.Int64N(int64(ttl / 20))))
			continue
		}
		if err != nil {
			return nil, err
		}
		var prev sql.NullString
		var version int64
		err = db.QueryRowContext(ctx, `
UPDATE tasks t SET leased_by = $2, lease_expiry = now() + $3 * interval '1 millisecond', version = t.version + 1, lock_fence = $4
FROM (SELECT leased_by FROM tasks WHERE id = $1) old
WHERE t.id = $1 AND t.state = 'pending' AND t.lock_fence <= $4
RETURNING old.leased_by, t.version`, id, name, ttl.Milliseconds(), int64(lock.Fence())).Scan(&prev, &version)
		if errors.Is(err, sql.ErrNoRows) { // completed meanwhile
			_ = lock.Release(ctx)
			continue
		}
		if err != nil {
			_ = lock.Release(ctx)
			return nil, err
		}
		if prev.Valid {
			took, _ := lock.TookOver()
			rep.add(func() {
				rep.Recoveries++
				if id == rep.Killed {
					rep.RecoveredFrom, rep.TookOverOwner = prev.String, took.Owner
				}
			})
		}
		return &leased{id: id, version: version, lock: lock, stop: lock.KeepAlive()}, nil
	}
}

// complete marks the task done if its version is still the one the lease
// wrote (optimistic concurrency, as in the seed), and records the
// completion in the same transaction.
func complete(ctx context.Context, db *sql.DB, name string, id, version int64) (bool, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'done', completed_by = $3, leased_by = NULL, lease_expiry = NULL, version = version + 1
		WHERE id = $1 AND version = $2`, id, version, name)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO completions (task_id, worker) VALUES ($1, $2)`, id, name); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// worker leases, processes and completes tasks until none is left. The
// victim stops at its KillAfter-th lease, holding it: its client is closed
// without a release (as a killed process leaves its locks) and its lease is
// handed back for the late write.
func worker(ctx context.Context, db *sql.DB, client *redlock.Client, name string, cfg config, victim chan<- victimState, rep *report) {
	rng := rand.New(rand.NewPCG(uint64(len(name)), uint64(name[len(name)-1])))
	for n := 1; ; n++ {
		l, err := lease(ctx, db, client, name, cfg.LeaseTTL, rng, rep)
		if err != nil {
			rep.add(func() { rep.Errors = append(rep.Errors, fmt.Errorf("%s: lease: %w", name, err)) })
			return
		}
		if l == nil {
			return
		}
		if victim != nil && n == cfg.KillAfter {
			rep.add(func() { rep.Killed = l.id })
			// Killed mid-task: no more extensions, no release (Close
			// releases nothing; it would not stop the keep-alive either).
			l.stop()
			_ = client.Close()
			victim <- victimState{id: l.id, version: l.version, fence: l.lock.Fence()}
			return
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) // the work
		ok, err := complete(ctx, db, name, l.id, l.version)
		if err != nil {
			rep.add(func() { rep.Errors = append(rep.Errors, fmt.Errorf("%s: complete %d: %w", name, l.id, err)) })
		} else if !ok {
			rep.add(func() {
				rep.Errors = append(rep.Errors, fmt.Errorf("%s: task %d: version changed under a held lease", name, l.id))
			})
		}
		if err := l.lock.Release(context.WithoutCancel(ctx)); err != nil {
			rep.add(func() { rep.Errors = append(rep.Errors, fmt.Errorf("%s: release %d: %w", name, l.id, err)) })
		}
	}
}

// run: cfg.Workers workers over cfg.Tasks tasks; worker-1 is killed holding
// a task; after every task is done its late writes arrive.
func run(ctx context.Context, db *sql.DB, newClient func(name string) (*redlock.Client, error), cfg config) (*report, error) {
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO tasks (id) SELECT generate_series(1, $1)`, cfg.Tasks); err != nil {
		return nil, err
	}
	rep := &report{ByWorker: map[string]int{}, Killed: -1}
	victim := make(chan victimState, 1)
	var wg sync.WaitGroup
	for w := range cfg.Workers {
		name := fmt.Sprintf("worker-%d", w+1)
		c, err := newClient(name)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		var v chan<- victimState
		if w == 0 {
			v = victim
		}
		wg.Go(func() { worker(ctx, db, c, name, cfg, v, rep) })
	}
	wg.Wait()

	// The killed worker's writes, late: after its task was recovered.
	select {
	case v := <-victim:
		done, err := complete(ctx, db, "worker-1", v.id, v.version)
		if err == nil && !done {
			err = errors.New("refused: the version moved on")
		}
		rep.LateVersion = err
		table, _ := sqlfence.New("tasks")
		rep.LateFence = table.Update(ctx, db, v.id, v.fence, sqlfence.Set{Column: "state", Value: "failed"})
	default:
		return nil, errors.New("the victim was never killed (fewer tasks than KillAfter?)")
	}
	err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT task_id) FROM completions`).Scan(&rep.Completed, &rep.DistinctTasks)
	if err != nil {
		return nil, err
	}
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT task_id FROM completions GROUP BY task_id HAVING count(*) > 1) d`).Scan(&rep.Duplicates)
	if err != nil {
		return nil, err
	}
	var by sql.NullString
	err = db.QueryRowContext(ctx, `SELECT completed_by, state FROM tasks WHERE id = $1`, rep.Killed).Scan(&by, &rep.LateRowsWhere)
	if err != nil {
		return nil, err
	}
	rep.RecoveredBy = by.String
	rows, err := db.QueryContext(ctx, `SELECT worker, count(*) FROM completions GROUP BY worker`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			return nil, err
		}
		rep.ByWorker[w] = n
	}
	return rep, rows.Err()
}
