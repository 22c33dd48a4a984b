package locktest

import (
	"fmt"
	"io"
	"sync"
)

// TB is what the kit needs of a test: *testing.T and *testing.B satisfy
// it, and so does a Session, for examples and programs.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Session is a TB outside a test: failures are written to its writer, and
// Close runs the cleanups, last registered first. Fatalf does not stop the
// caller: the kit's calls that fail return zero values.
type Session struct {
	w io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// NewSession returns a Session that writes its failures to w.
func NewSession(w io.Writer) *Session { return &Session{w: w} }

// Helper does nothing: there is no test to attribute lines to.
func (s *Session) Helper() {}

// Cleanup registers f to run at Close.
func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Errorf writes a failure.
func (s *Session) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
	fmt.Fprintf(s.w, "FAIL: "+format+"\n", args...)
}

// Fatalf writes a failure, as Errorf.
func (s *Session) Fatalf(format string, args ...any) { s.Errorf(format, args...) }

// Failed reports whether a failure was written.
func (s *Session) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Close runs the cleanups, last registered first.
func (s *Session) Close() {
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		f()
	}
}
