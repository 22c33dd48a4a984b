// Package memnode is an in-process node.Node with the semantics of the
// Redis node (the same conformance suite passes), for demos, development
// without Redis and unit tests of code that takes locks. It implements
// every optional capability of package node, and can be stopped, wiped or
// given a clock offset to stand in for a failing server.
package memnode
