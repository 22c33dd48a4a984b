package memnode_test

import (
	"testing"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/nodetest"
)

// The conformance suite runs on a node with none of the optional
// capabilities: the checks of the contract pass, those of a missing
// capability are skipped.
func TestBareNodeConformance(t *testing.T) {
	nodetest.Run(t, func(t *testing.T) node.Node {
		return struct{ node.Node }{memnode.New(t.Name())}
	})
}
