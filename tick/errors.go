package tick

import (
	"errors"
	"fmt"

	"github.com/quorumlock/quorumlock/redlock"
)

// Sentinel errors for bad input. Each error Run returns for bad input wraps
// one of them and redlock.ErrInvalidArgument; nothing was sent to a node
// then, and nothing is held.
var (
	// ErrBadJob: the job name is empty, too long, or has a character that
	// job names may not have (see Run).
	ErrBadJob = errors.New("tick: bad job name")
	// ErrBadPeriod: Every's period is zero, negative or too long.
	ErrBadPeriod = errors.New("tick: bad period")
	// ErrBadTick: the tick cannot be named: At's zero time, Named's empty
	// or malformed label, or a zero Schedule.
	ErrBadTick = errors.New("tick: bad tick")
	// ErrBadOption: a nil option, or an option out of its range (see each
	// option).
	ErrBadOption = errors.New("tick: bad option")
)

func bad(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: "+format, append([]any{redlock.ErrInvalidArgument, kind}, args...)...)
}
