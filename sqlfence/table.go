package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// DB is what Update needs: *sql.DB, *sql.Tx and *sql.Conn have it.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Placeholder is the parameter style of the driver.
type Placeholder int

const (
	// Dollar: $1, $2, ... (PostgreSQL; the default).
	Dollar Placeholder = iota
	// Question: ?, ?, ... (MySQL, SQLite).
	Question
)

// DefaultFenceColumn and DefaultIDColumn are the default column names.
const (
	DefaultFenceColumn = "lock_fence"
	DefaultIDColumn    = "id"
)

// Table is a table whose rows are written under a lock's fence. It is
// immutable and safe for concurrent use.
type Table struct {
	name, idColumn, fenceColumn string
	placeholder                 Placeholder
}

// Option configures a Table.
type Option func(*Table)

// WithIDColumn names the key column (default "id").
func WithIDColumn(name string) Option { return func(t *Table) { t.idColumn = name } }

// WithFenceColumn names the fence column (default "lock_fence").
func WithFenceColumn(name string) Option { return func(t *Table) { t.fenceColumn = name } }

// WithPlaceholder sets the parameter style (default Dollar).
func WithPlaceholder(p Placeholder) Option { return func(t *Table) { t.placeholder = p } }

// identifier is a plain SQL name, optionally schema-qualified.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
var column = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// New describes the table name (e.g. "tasks" or "app.tasks").
func New(name string, opts ...Option) (*Table, error) {
	t := &Table{name: name, idColumn: DefaultIDColumn, fenceColumn: DefaultFenceColumn}
	for _, o := range opts {
		if o == nil {
			return nil, invalidArg("nil option")
		}
		o(t)
	}
	if !identifier.MatchString(t.name) {
		return nil, invalidArg("table name %q is not a plain SQL name", t.name)
	}
	for _, c := range []string{t.idColumn, t.fenceColumn} {
		if !column.MatchString(c) {
			return nil, invalidArg("column name %q is not a plain SQL name", c)
		}
	}
	if t.idColumn == t.fenceColumn {
		return nil, invalidArg("id and fence column are both %q", t.idColumn)
	}
	if t.placeholder != Dollar && t.placeholder != Question {
		return nil, invalidArg("unknown placeholder style %d", t.placeholder)
	}
	return t, nil
}

// Migration is the PostgreSQL statement that adds the fence column: BIGINT,
// 0 for rows never written under a lock.
func (t *Table) Migration() string {
	return fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s BIGINT NOT NULL DEFAULT 0", t.name, t.fenceColumn)
}

// Set is one column to write and its value.
type Set struct {
	Column string
	Value  any
}

// Update writes the columns and the fence to the row with the id if the row's
// fence is at most fence (an equal fence is the same holder writing again),
// in one statement. Zero rows: ErrStaleFence or ErrNotFound (see the package
// doc). db may be a transaction: the write then commits with it.
func (t *Table) Update(ctx context.Context, db DB, id any, fence uint64, cols ...Set) error {
	if err := t.check(ctx, db, fence); err != nil {
		return err
	}
	if len(cols) == 0 {
		return invalidArg("no column to set")
	}
	var b strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		if t.placeholder == Question {
			return "?"
		}
		return "$" + strconv.Itoa(len(args))
	}
	fmt.Fprintf(&b, "UPDATE %s SET ", t.name)
	for _, c := range cols {
		if !column.MatchString(c.Column) || c.Column == t.fenceColumn || c.Column == t.idColumn {
			return invalidArg("column %q: not a plain SQL name, or the id or fence column", c.Column)
		}
		fmt.Fprintf(&b, "%s = %s, ", c.Column, arg(c.Value))
	}
	f := int64(fence)
	fmt.Fprintf(&b, "%s = %s WHERE %s = %s AND %s <= %s",
		t.fenceColumn, arg(f), t.idColumn, arg(id), t.fenceColumn, arg(f))
	res, err := db.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("sqlfence: update %s %v: %w", t.name, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlfence: update %s %v: rows affected: %w", t.name, id, err)
	}
	if n > 0 {
		return nil
	}
	return t.refusal(ctx, db, id, fence)
}

// Fence reads the row's fence column: ErrNotFound when there is no row.
func (t *Table) Fence(ctx context.Context, db DB, id any) (uint64, error) {
	if ctx == nil || db == nil || isNil(db) {
		return 0, invalidArg("nil context or database")
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s", t.fenceColumn, t.name, t.idColumn, t.param(1))
	var cur int64
	err := db.QueryRowContext(ctx, q, id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s %v", ErrNotFound, t.name, id)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlfence: read fence of %s %v: %w", t.name, id, err)
	}
	return uint64(cur), nil
}

// refusal says why an update matched no row.
func (t *Table) refusal(ctx context.Context, db DB, id any, fence uint64) error {
	cur, err := t.Fence(ctx, db, id)
	if err != nil {
		return err
	}
	if cur > fence {
		return staleFence(t.name, id, fence, cur)
	}
	return fmt.Errorf("%w: %s %v (missing when the update ran; fence %d there now)", ErrNotFound, t.name, id, cur)
}

func staleFence(table string, id any, fence, cur uint64) error {
	return fmt.Errorf("%w: %s %v: fence %d, the row has %d from a newer holder", ErrStaleFence, table, id, fence, cur)
}

func (t *Table) param(n int) string {
	if t.placeholder == Question {
		return "?"
	}
	return "$" + strconv.Itoa(n)
}

func (t *Table) check(ctx context.Context, db DB, fence uint64) error {
	switch {
	case t == nil:
		return invalidArg("nil Table")
	case ctx == nil:
		return invalidArg("nil context")
	case db == nil || isNil(db):
		return invalidArg("nil database")
	case fence == 0:
		return invalidArg("fence 0: a write must carry the fence of the lock it was made under")
	case fence > math.MaxInt64:
		return fmt.Errorf("%w: %d", ErrFenceRange, fence)
	}
	return nil
}

func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
