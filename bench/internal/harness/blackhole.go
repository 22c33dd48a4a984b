package harness

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Blackhole is a TCP listener on 127.0.0.1 that accepts connections and
// reads whatever is sent, but never writes a byte back: a node that is
// reachable but never answers (a hung server, a dropped-reply network).
type Blackhole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartBlackhole listens on 127.0.0.1:0.
func StartBlackhole() (*Blackhole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Blackhole{ln: ln, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the host:port to dial.
func (b *Blackhole) Addr() string { return b.ln.Addr().String() }

func (b *Blackhole) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return // closed
		}
		b.mu.Lock()
		if b.conns == nil { // closed meanwhile
			b.mu.Unlock()
			_ = c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			_, _ = io.Copy(io.Discard, c) // read until the peer or Close ends it
			b.mu.Lock()
			delete(b.conns, c)
			b.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// Conns is the number of connections currently held open.
func (b *Blackhole) Conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// Close stops listening, drops every connection and waits for its
// goroutines.
func (b *Blackhole) Close() error {
	err := b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
	b.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
