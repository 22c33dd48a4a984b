// Package fakeresp is a test fixture: a RESP server on loopback that
// answers what a test tells it to, so that tests can check how the client
// takes a node that sends garbage, wrong types, absurd lengths, truncated
// replies or nothing at all.
//
// A Server reads each command the client sends (an array of bulk strings)
// and writes what its Reply returns for it. Lying answers the connection
// handshake like an old server and INFO with a plausible identity, so that
// a client gets as far as its lock commands, and answers those with a
// Fault.
package fakeresp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Reply decides the answer to one command (its name upper-cased, then its
// arguments). It writes out (nothing when out is empty) and, with hangup,
// closes the connection afterwards.
type Reply func(cmd []string) (out []byte, hangup bool)

// Server is a fake RESP server. Its methods are safe for concurrent use.
type Server struct {
	ln       net.Listener
	reply    Reply
	commands atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
	closed   bool
}

// Start listens on a free loopback port and serves every connection with
// reply until Close.
func Start(reply Reply) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, reply: reply, conns: map[net.Conn]bool{}}
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Commands is how many commands the server has read.
func (s *Server) Commands() int64 { return s.commands.Load() }

// Close stops listening, closes every connection and waits for the
// server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *Server) serve(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		s.commands.Add(1)
		out, hangup := s.reply(cmd)
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
		if hangup {
			return
		}
	}
}

// readCommand reads one command: an array of bulk strings, or an inline
// command (words on a line).
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		cmd := strings.Fields(line)
		if len(cmd) > 0 {
			cmd[0] = strings.ToUpper(cmd[0])
		}
		return cmd, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("fakeresp: bad array header %q", line)
	}
	cmd := make([]string, n)
	for i := range cmd {
		if cmd[i], err = readBulk(r); err != nil {
			return nil, err
		}
	}
	if n > 0 {
		cmd[0] = strings.ToUpper(cmd[0])
	}
	return cmd, nil
}

func readBulk(r *bufio.Reader) (string, error) {
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 || n > 1<<26 {
		return "", fmt.Errorf("fakeresp: bad bulk header %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("fakeresp: empty line")
	}
	return line, nil
}
