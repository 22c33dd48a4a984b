package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/extend"
)

// kept is a lock as the watchdog sees it: a lease with a TTL and a validity.
type kept struct{ l *Lock }

func (k kept) TTL() time.Duration    { return k.l.currentTTL() }
func (k kept) ValidUntil() time.Time { return k.l.ValidUntil() }

// newWatchdog builds the client's watchdog; it validates the keep-alive
// options and runs a goroutine only while it keeps locks.
func (c *Client) newWatchdog() error {
	opts := append([]extend.Option{extend.WithLogger(c.logger)}, c.cfg.keep...)
	wd, err := extend.New(c.renew, opts...)
	if err != nil {
		return invalidArg("%w", err)
	}
	c.keeper = wd
	return nil
}

// keptLocks is the number of locks whose auto-extension is running.
func (c *Client) keptLocks() int { return c.keeper.Len() }

// renew is the watchdog's renew function: one extension round for every
// lock due in a tick (see extendLocks).
func (c *Client) renew(ctx context.Context, leases []kept) []error {
	out := make([]error, len(leases))
	start := time.Now()
	items := make([]extendItem, 0, len(leases))
	at := make([]int, 0, len(leases))
	for i, k := range leases {
		l := k.l
		if !l.op.TryLock() { // the holder is extending or releasing it right now
			out[i] = errBusy
			continue
		}
		it, err := l.extendable(start, l.currentTTL())
		if err != nil {
			out[i] = err
			l.op.Unlock()
			continue
		}
		items = append(items, it)
		at = append(at, i)
	}
	if len(items) == 0 {
		return out
	}
	defer func() {
		for _, it := range items {
			it.l.op.Unlock()
		}
	}()
	for k, err := range c.extendLocks(context.WithoutCancel(ctx), items) {
		out[at[k]] = err
	}
	return out
}

// errBusy: the lock was being extended or released by its holder when the
// round started; the watchdog retries it.
var errBusy = fmt.Errorf("redlock: lock busy with another extend or release")
