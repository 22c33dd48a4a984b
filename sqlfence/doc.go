// Package sqlfence makes SQL writes conditional on a lock's fence, so that
// the database refuses the late write of a holder that was paused past its
// lock (a GC pause, a VM migration) after a newer holder has written.
//
// Each protected row carries the largest fence that wrote it, in a BIGINT
// column (lock_fence by default; Table.Migration gives the statement):
//
//	ALTER TABLE tasks ADD COLUMN IF NOT EXISTS lock_fence BIGINT NOT NULL DEFAULT 0
//
// Table.Update runs one statement,
//
//	UPDATE tasks SET state = $1, lock_fence = $2 WHERE id = $3 AND lock_fence <= $4 (the fence twice)
//
// and maps zero rows to an error: ErrStaleFence when the row holds a larger
// fence (a newer holder wrote), ErrNotFound when there is no such row. The
// refusal is the database's own: the check and the write are one statement.
// Telling the two apart takes a second statement (a SELECT of the row's fence)
// after the refusal, outside the UPDATE: a row inserted between the two is
// reported as ErrNotFound, which it was when the UPDATE ran.
//
// Fences are uint64 and BIGINT is signed: a fence above math.MaxInt64 is
// refused with ErrFenceRange before anything is sent (redlock's fences start
// from a clock in microseconds, about 1.8e15 today, far below 9.2e18). Fence
// 0 is ErrInvalidArgument: every lock's fence is at least 1.
//
// # Databases
//
// Tested against PostgreSQL 15 through database/sql and the pgx driver
// (internal tests in the examples module, on a server the tests start).
// Placeholders are PostgreSQL's $n by default, or ? (WithPlaceholder(Question):
// MySQL, SQLite); the statements of both are checked as text, only
// PostgreSQL runs them. Zero rows must mean "no row matched": PostgreSQL
// and SQLite count matched rows; MySQL counts changed rows unless
// the connection sets CLIENT_FOUND_ROWS (clientFoundRows=true in
// go-sql-driver/mysql). Identifiers are checked (letters, digits, _ and one
// optional schema dot) and written unquoted.
//
// StatusStore is a statuslock.Store on a PostgreSQL table (an upsert with the
// same condition), so WithStatusLock's writes are fenced by the database.
//
// The package uses database/sql only: no driver is imported.
package sqlfence
