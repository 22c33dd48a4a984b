package seed

import (
	"context"
	"database/sql"
	"testing"

	"github.com/quorumlock/quorumlock/internal/pgtest"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// StartT starts n redis-server nodes (skipped without redis-server, failed
// with CI=true) and, with withDB, PostgreSQL (the same), stopped at the end
// of the test.
func StartT(t testing.TB, n int, withDB bool) *Env {
	t.Helper()
	e := &Env{Redis: redistest.StartT(t, n)}
	if withDB {
		e.DB = StartDBT(t)
	}
	return e
}

// StartDBT starts PostgreSQL for the test and opens it.
func StartDBT(t testing.TB) *sql.DB {
	t.Helper()
	pg := pgtest.StartT(t)
	db, err := OpenDB(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
