package sqlfence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/quorumlock/quorumlock/sqlfence"
)

// captureDriver records the statements and arguments it is sent and answers
// every Exec with the rows affected it is told; it runs no SQL. It shows the
// text Update builds (the PostgreSQL tests in the examples module show what
// the text does).
type captureDriver struct {
	mu       sync.Mutex
	stmts    []string
	affected int64
}

func (d *captureDriver) Open(string) (driver.Conn, error) { return captureConn{d}, nil }

type captureConn struct{ d *captureDriver }

func (c captureConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (c captureConn) Close() error                        { return nil }
func (c captureConn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }
func (c captureConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.d.stmts = append(c.d.stmts, fmt.Sprintf("%s %v", q, vals))
	return driver.RowsAffected(c.d.affected), nil
}

var registerOnce sync.Once
var capture = &captureDriver{affected: 1}

func captureDB(t *testing.T) *sql.DB {
	registerOnce.Do(func() { sql.Register("sqlfence-capture", capture) })
	db, err := sql.Open("sqlfence-capture", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	capture.mu.Lock()
	capture.stmts = nil
	capture.mu.Unlock()
	return db
}

// The statement of each placeholder style: the fence is compared in the
// WHERE clause, passed twice (as the new value and in the condition), in order.
func TestStatementText(t *testing.T) {
	db := captureDB(t)
	ctx := context.Background()
	for _, c := range []struct {
		opts []sqlfence.Option
		want string
	}{
		{nil, "UPDATE tasks SET state = $1, owner = $2, lock_fence = $3 WHERE id = $4 AND lock_fence <= $5 [done w1 42 7 42]"},
		{[]sqlfence.Option{sqlfence.WithPlaceholder(sqlfence.Question), sqlfence.WithIDColumn("task_id"), sqlfence.WithFenceColumn("fence")},
			"UPDATE app.tasks SET state = ?, owner = ?, fence = ? WHERE task_id = ? AND fence <= ? [done w1 42 7 42]"},
	} {
		name := "tasks"
		if c.opts != nil {
			name = "app.tasks"
		}
		tbl, err := sqlfence.New(name, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		capture.mu.Lock()
		capture.stmts = nil
		capture.mu.Unlock()
		if err := tbl.Update(ctx, db, 7, 42, sqlfence.Set{Column: "state", Value: "done"}, sqlfence.Set{Column: "owner", Value: "w1"}); err != nil {
			t.Fatal(err)
		}
		capture.mu.Lock()
		got := capture.stmts
		capture.mu.Unlock()
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("sent %q\nwant %q", got, c.want)
		}
	}
}
