package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/examples/internal/seed"
	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
	"github.com/quorumlock/quorumlock/sqlfence"
	"github.com/quorumlock/quorumlock/statuslock"
)

func tasksTable(t *testing.T, db *sql.DB) *sqlfence.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := sqlfence.New("tasks")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE tasks (id BIGINT PRIMARY KEY, state TEXT NOT NULL, owner TEXT)`,
		tbl.Migration(),
		tbl.Migration(), // IF NOT EXISTS: running it twice is fine
		`INSERT INTO tasks (id, state) VALUES (1, 'pending')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return tbl
}

func row(t *testing.T, db *sql.DB, id int) (state string, fence int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT state, lock_fence FROM tasks WHERE id = $1`, id).Scan(&state, &fence); err != nil {
		t.Fatal(err)
	}
	return state, fence
}

// The database refuses an older fence, accepts the same or a newer one, and
// says which it was: stale fence or missing row.
func TestUpdateFenceRules(t *testing.T) {
	db := seed.StartDBT(t)
	tbl := tasksTable(t, db)
	ctx := context.Background()
	set := func(state string) sqlfence.Set { return sqlfence.Set{Column: "state", Value: state} }

	if err := tbl.Update(ctx, db, 1, 10, set("a")); err != nil {
		t.Fatalf("first write: %v", err)
	}
	if err := tbl.Update(ctx, db, 1, 10, set("b")); err != nil {
		t.Fatalf("same fence again: %v", err)
	}
	err := tbl.Update(ctx, db, 1, 9, set("stale"))
	if !errors.Is(err, sqlfence.ErrStaleFence) {
		t.Fatalf("older fence: %v, want ErrStaleFence", err)
	}
	if st, f := row(t, db, 1); st != "b" || f != 10 {
		t.Fatalf("after a refused write the row is (%s, %d), want (b, 10)", st, f)
	}
	if err := tbl.Update(ctx, db, 2, 10, set("x")); !errors.Is(err, sqlfence.ErrNotFound) || errors.Is(err, sqlfence.ErrStaleFence) {
		t.Fatalf("missing row: %v, want ErrNotFound only", err)
	}
	// The largest fence a BIGINT holds is written and read back exactly.
	if err := tbl.Update(ctx, db, 1, math.MaxInt64, set("max")); err != nil {
		t.Fatalf("fence MaxInt64: %v", err)
	}
	if f, err := tbl.Fence(ctx, db, 1); err != nil || f != math.MaxInt64 {
		t.Fatalf("Fence = %d, %v", f, err)
	}
	if err := tbl.Update(ctx, db, 1, math.MaxInt64+1, set("over")); !errors.Is(err, sqlfence.ErrFenceRange) {
		t.Fatalf("fence above MaxInt64: %v", err)
	}
	// In a transaction the write is the transaction's: rolled back, it is gone.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO tasks (id, state) VALUES (3, 'pending')`); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Update(ctx, tx, 3, 5, set("in-tx")); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	if st, f := row(t, db, 3); st != "pending" || f != 0 {
		t.Fatalf("after rollback (%s, %d)", st, f)
	}
}

// lockClient is a redlock client on the env's nodes with fast retries.
func lockClient(t *testing.T, env *seed.Env, owner string) *redlock.Client {
	t.Helper()
	c, err := redlock.New(env.Nodes(), redlock.WithOwner(owner), redlock.WithRetry(retry.Constant(200, 20*time.Millisecond, 10*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A holder paused past its lock writes after the next holder: the database
// refuses the late write and keeps the next holder's.
func TestPausedHolderRefusedByDatabase(t *testing.T) {
	env := seed.StartT(t, 3, true)
	tbl := tasksTable(t, env.DB)
	ctx := context.Background()
	a, b := lockClient(t, env, "worker-a"), lockClient(t, env, "worker-b")

	la, err := a.Acquire(ctx, "task:1", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// worker-a pauses here (no extension): its lock expires and worker-b,
	// waiting, takes it with a larger fence and writes.
	lb, err := b.Acquire(ctx, "task:1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if lb.Fence() <= la.Fence() {
		t.Fatalf("fences %d then %d: not increasing", la.Fence(), lb.Fence())
	}
	if err := tbl.Update(ctx, env.DB, 1, lb.Fence(), sqlfence.Set{Column: "state", Value: "done"}, sqlfence.Set{Column: "owner", Value: "worker-b"}); err != nil {
		t.Fatal(err)
	}
	// worker-a wakes up and writes with its old fence.
	err = tbl.Update(ctx, env.DB, 1, la.Fence(), sqlfence.Set{Column: "state", Value: "failed"}, sqlfence.Set{Column: "owner", Value: "worker-a"})
	if !errors.Is(err, sqlfence.ErrStaleFence) {
		t.Fatalf("late write of the paused holder: %v, want ErrStaleFence", err)
	}
	if st, f := row(t, env.DB, 1); st != "done" || uint64(f) != lb.Fence() {
		t.Fatalf("row (%s, %d), want (done, %d)", st, f, lb.Fence())
	}
}

// The statuslock store on PostgreSQL: WithStatusLock's writes carry the
// fence, and a paused worker's late RUNNING is refused after the
// reconciler wrote FAILED.
func TestStatusStorePausedHolderRefused(t *testing.T) {
	env := seed.StartT(t, 3, true)
	ctx := context.Background()
	store, err := sqlfence.NewStatusStore(env.DB, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.DB.ExecContext(ctx, store.StatusSchema()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, "svc"); !errors.Is(err, statuslock.ErrNotFound) {
		t.Fatalf("Get of an unknown service: %v", err)
	}
	worker, err := statuslock.New(lockClient(t, env, "worker"), statuslock.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	reconciler, err := statuslock.New(lockClient(t, env, "reconciler"))
	if err != nil {
		t.Fatal(err)
	}
	wl, err := worker.Acquire(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, "svc", statuslock.StatusDeploying, wl.Fence()); err != nil {
		t.Fatal(err)
	}
	// The worker pauses past its TTL; the reconciler takes the lock and
	// writes FAILED.
	err = reconciler.WithStatusLock(ctx, "svc", func(ctx context.Context, fence uint64) error {
		return store.Set(ctx, "svc", statuslock.StatusFailed, fence)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Set(ctx, "svc", statuslock.StatusRunning, wl.Fence())
	if !errors.Is(err, statuslock.ErrStaleFence) || !errors.Is(err, sqlfence.ErrStaleFence) {
		t.Fatalf("late RUNNING: %v, want ErrStaleFence", err)
	}
	if n := strings.Count(err.Error(), "stale fence"); n != 1 || !strings.Contains(err.Error(), "from a newer holder") {
		t.Errorf("late RUNNING: %q says \"stale fence\" %d times, want once, and who wrote last", err, n)
	}
	rec, err := store.Get(ctx, "svc")
	if err != nil || rec.Status != statuslock.StatusFailed || rec.Fence <= wl.Fence() {
		t.Fatalf("final record %+v, %v", rec, err)
	}
}
