package sqlfence

import (
	"errors"
	"fmt"
)

var (
	// ErrStaleFence: the row holds a larger fence than the write's: a newer
	// holder of the lock has written it. Nothing was changed.
	ErrStaleFence = errors.New("sqlfence: stale fence")
	// ErrNotFound: no row has the id. Nothing was changed.
	ErrNotFound = errors.New("sqlfence: row not found")
	// ErrFenceRange: the fence does not fit a BIGINT (it is above
	// math.MaxInt64). Nothing was sent.
	ErrFenceRange = errors.New("sqlfence: fence above the BIGINT range")
	// ErrInvalidArgument: a bad argument (a nil database, an identifier that
	// is not a plain SQL name, no column to set, fence 0). Nothing was sent.
	ErrInvalidArgument = errors.New("sqlfence: invalid argument")
)

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
