package redlock

import (
	"context"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
)

// NewLocal returns a Client on a single in-process memory node, for
// development and tests without Redis. Its locks exclude only within this
// process; it logs a warning saying so, once, through the client's logger
// (WithLogger).
//
// It is an explicit choice: New never falls back to a memory node when the
// Redis nodes it was given fail; their failures are returned as errors
// (ErrQuorumUnreachable).
func NewLocal(opts ...Option) (*Client, error) {
	c, err := New([]node.Node{memnode.New("local")}, opts...)
	if err != nil {
		return nil, err
	}
	c.logger.WarnContext(context.Background(), "redlock: local mode: locks live in this process only and exclude nothing across processes; do not use in production")
	return c, nil
}
