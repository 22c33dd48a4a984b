package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/quorumlock/quorumlock/statuslock"
)

// DefaultStatusTable is the default table of a StatusStore.
const DefaultStatusTable = "service_status"

// StatusStore is a statuslock.Store on a PostgreSQL table, one row per
// service. Set is one upsert whose update happens only if the row's fence is
// at most the write's, so a paused holder's late write is refused by the
// database.
type StatusStore struct {
	db    *sql.DB
	table string
}

// NewStatusStore returns a store on table ("" means DefaultStatusTable),
// which StatusSchema creates.
func NewStatusStore(db *sql.DB, table string) (*StatusStore, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: %w: nil database", statuslock.ErrInvalidArgument, ErrInvalidArgument)
	}
	if table == "" {
		table = DefaultStatusTable
	}
	if !identifier.MatchString(table) {
		return nil, fmt.Errorf("%w: %w: table name %q is not a plain SQL name", statuslock.ErrInvalidArgument, ErrInvalidArgument, table)
	}
	return &StatusStore{db: db, table: table}, nil
}

// StatusSchema is the PostgreSQL statement that creates the store's table.
func (s *StatusStore) StatusSchema() string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	service_id TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	lock_fence BIGINT NOT NULL
)`, s.table)
}

// Get implements statuslock.Store.
func (s *StatusStore) Get(ctx context.Context, serviceID string) (statuslock.Record, error) {
	if ctx == nil || serviceID == "" {
		return statuslock.Record{}, fmt.Errorf("%w: nil context or empty service id", statuslock.ErrInvalidArgument)
	}
	var st string
	var fence int64
	err := s.db.QueryRowContext(ctx, fmt.Sprintf("SELECT status, lock_fence FROM %s WHERE service_id = $1", s.table), serviceID).Scan(&st, &fence)
	if errors.Is(err, sql.ErrNoRows) {
		return statuslock.Record{}, fmt.Errorf("%w: %w: %q", statuslock.ErrNotFound, ErrNotFound, serviceID)
	}
	if err != nil {
		return statuslock.Record{}, fmt.Errorf("sqlfence: get status %q: %w", serviceID, err)
	}
	return statuslock.Record{ServiceID: serviceID, Status: statuslock.Status(st), Fence: uint64(fence)}, nil
}

// Set implements statuslock.Store. A refused write wraps both
// statuslock.ErrStaleFence and ErrStaleFence; a fence above math.MaxInt64
// wraps statuslock.ErrInvalidArgument and ErrFenceRange.
func (s *StatusStore) Set(ctx context.Context, serviceID string, status statuslock.Status, fence uint64) error {
	switch {
	case ctx == nil || serviceID == "":
		return fmt.Errorf("%w: nil context or empty service id", statuslock.ErrInvalidArgument)
	case !status.Valid():
		return fmt.Errorf("%w: unknown status %q", statuslock.ErrInvalidArgument, string(status))
	case fence == 0:
		return fmt.Errorf("%w: fence 0: a write must carry the fence of the lock it was made under", statuslock.ErrInvalidArgument)
	case fence > math.MaxInt64:
		return fmt.Errorf("%w: %w: %d", statuslock.ErrInvalidArgument, ErrFenceRange, fence)
	}
	q := fmt.Sprintf(`INSERT INTO %[1]s (service_id, status, lock_fence) VALUES ($1, $2, $3)
ON CONFLICT (service_id) DO UPDATE SET status = EXCLUDED.status, lock_fence = EXCLUDED.lock_fence
WHERE %[1]s.lock_fence <= EXCLUDED.lock_fence`, s.table)
	res, err := s.db.ExecContext(ctx, q, serviceID, string(status), int64(fence))
	if err != nil {
		return fmt.Errorf("sqlfence: set status %q: %w", serviceID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlfence: set status %q: rows affected: %w", serviceID, err)
	}
	if n > 0 {
		return nil
	}
	cur, err := s.Get(ctx, serviceID)
	if err != nil {
		return err
	}
	return &staleStatus{detail: fmt.Sprintf("set %q to %s with fence %d: %s has fence %d from a newer holder", serviceID, status, fence, s.table, cur.Fence)}
}

// staleStatus is a refused status write: it is both statuslock's and this
// package's ErrStaleFence, and says "stale fence" once.
type staleStatus struct{ detail string }

func (e *staleStatus) Error() string   { return statuslock.ErrStaleFence.Error() + ": " + e.detail }
func (e *staleStatus) Unwrap() []error { return []error{statuslock.ErrStaleFence, ErrStaleFence} }
