package redlock

import (
	"time"

	"github.com/quorumlock/quorumlock/node"
)

// Accessors for tests only.

func (c *Client) KeyName(key string) string                   { return c.cfg.keyName(key) }
func (c *Client) Nodes() []node.Node                          { return append([]node.Node(nil), c.nodes...) }
func (c *Client) Quorum() int                                 { return c.quorum }
func (c *Client) Drift(ttl time.Duration) time.Duration       { return c.cfg.drift(ttl) }
func (c *Client) NodeTimeout(ttl time.Duration) time.Duration { return c.cfg.timeoutFor(ttl) }
func (c *Client) KeptLocks() int                              { return c.keptLocks() }
func (c *Client) ReleaseChannel() string                      { return c.releaseChannel }

func (l *Lock) Token() string { return l.token }

// WithWallClock sets the clock whose microseconds the client offers as the
// seed of new fence counters, to test clients with skewed clocks.
func WithWallClock(now func() time.Time) Option { return func(c *config) { c.wallClock = now } }

// Parked is the number of this client's waiters parked for key.
func (c *Client) Parked(key string) int { return c.notify.Parked(c.cfg.keyName(key)) }

// Identified reports whether every node has said who it is.
func (c *Client) Identified() bool { return c.ident.All() }

// Unanswered reports, per node, whether a request of the lock is still on
// its way there or failed, as Release sees it.
func (l *Lock) Unanswered() []bool {
	return l.sent.MayLand()
}

// MaxHandOvers bounds the hand-overs in a row inside one client.
const MaxHandOvers = maxHandOvers

// StallGuardFired is the debug log message of a round whose stall guard
// fired (its "op" attribute names the round).
const StallGuardFired = stallGuardFired
