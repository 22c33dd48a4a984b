package redistest

import (
	"fmt"
	"net"
	"sync"
)

// handedOut remembers ports this process already picked, so two nodes started
// at the same moment never get the same port even if the kernel re-offers it.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// freePort returns a loopback TCP port that was free a moment ago. Another
// process can still grab it before redis-server binds it; callers detect that
// (early exit or a different server answering) and retry with a new port.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: pick free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()

		handedOutMu.Lock()
		dup := handedOut[port]
		handedOut[port] = true
		handedOutMu.Unlock()
		if !dup {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: pick free port: kernel kept offering ports already in use by this harness")
}
