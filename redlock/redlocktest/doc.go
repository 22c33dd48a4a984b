// Package redlocktest checks that a redlock.Node keeps the contract the
// quorum client relies on. quorumlock runs it against its Redis node (on real
// redis-server processes) and its memory node; run it against your own Node
// implementation too:
//
//	func TestMyNode(t *testing.T) {
//		redlocktest.RunNodeConformance(t, func(t *testing.T) redlock.Node { return newMyNode(t) })
//	}
package redlocktest
