package redlock

import "github.com/quorumlock/quorumlock/node"

// Node is a node with every optional capability: the tests' wrappers embed
// it, so that they forward the capabilities of the node they wrap.
type Node interface {
	node.Node
	node.Inspector
	node.ForceReleaser
	node.Subscriber
}
