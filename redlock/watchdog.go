package redlock

import (
	"sync"

	"github.com/quorumlock/quorumlock/extend"
)

// keeper is a Client's watchdog, created on first use. The watchdog runs a
// goroutine only while it keeps locks.
type keeper struct {
	once sync.Once
	wd   *extend.Watchdog
}

func (c *Client) watchdog() *extend.Watchdog {
	c.keeper.once.Do(func() {
		wd, err := extend.New(renewer{c}, c.cfg.ext.options(c.logger)...)
		if err != nil {
			panic("redlock: extend options passed validation but not extend.New: " + err.Error())
		}
		c.keeper.wd = wd
	})
	return c.keeper.wd
}

// keptLocks is the number of locks whose auto-extension is running.
func (c *Client) keptLocks() int { return c.watchdog().Len() }
