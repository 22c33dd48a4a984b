package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	readyTimeout = 10 * time.Second
	probeDial    = 200 * time.Millisecond
	probeIO      = 500 * time.Millisecond
	probeEvery   = 20 * time.Millisecond
)

// errWrongServer means something answered on the port, but it is not the
// process we started: the port was taken between picking and binding.
var errWrongServer = errors.New("a different redis-server answers on this port")

// errExited means the process exited before it answered.
var errExited = errors.New("redis-server exited before it answered PING")

// waitReady polls addr until the server answers, bounded by readyTimeout and
// ctx. With wantPID > 0 it also checks INFO's process_id, so we never mistake
// someone else's server on a recycled port for ours. exited, if non-nil, is
// closed when the process dies, which ends the wait immediately.
func waitReady(ctx context.Context, addr string, wantPID int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if exited != nil {
		// Abort an in-flight probe when the process dies: a probe stuck on
		// a foreign listener that accepts but never answers would otherwise
		// hold us for probeIO.
		probeCtx, cancelProbe := context.WithCancel(ctx)
		stop := make(chan struct{})
		defer close(stop) // runs before cancelProbe: the goroutine exits
		defer cancelProbe()
		go func() {
			select {
			case <-exited:
				cancelProbe()
			case <-stop:
			}
		}()
		ctx = probeCtx
	}
	hasExited := func() bool {
		select {
		case <-exited: // nil channel: never
			return true
		default:
			return false
		}
	}
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	var last error
	for {
		if hasExited() {
			return errExited
		}
		last = probe(ctx, addr, wantPID)
		if last == nil {
			return nil
		}
		if hasExited() {
			return errExited
		}
		if errors.Is(last, errWrongServer) {
			return last
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer PING: %w (last error: %v)", addr, ctx.Err(), last)
		case <-exited: // nil channel blocks forever: fine
			return errExited
		case <-t.C:
		}
	}
}

// probe speaks just enough RESP to ask a server for PING or its process id;
// a raw connection keeps the readiness check free of client pools/goroutines.
func probe(ctx context.Context, addr string, wantPID int) error {
	d := net.Dialer{Timeout: probeDial}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	_ = conn.SetDeadline(time.Now().Add(probeIO))
	r := bufio.NewReader(conn)

	if wantPID <= 0 {
		if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
			return err
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != "+PONG" {
			return fmt.Errorf("unexpected PING reply %q", strings.TrimSpace(line))
		}
		return nil
	}

	if _, err := io.WriteString(conn, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "$") { // e.g. "-LOADING ..." while starting
		return fmt.Errorf("unexpected INFO reply %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return fmt.Errorf("unexpected INFO reply %q", line)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	for l := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			if pid, _ := strconv.Atoi(v); pid == wantPID {
				return nil
			}
			return fmt.Errorf("%w (pid %s, want %d)", errWrongServer, v, wantPID)
		}
	}
	return errors.New("INFO reply has no process_id")
}

// tailFile returns up to limit bytes from the end of path, for error messages.
func tailFile(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-limit, 0)
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	return strings.TrimSpace(string(b[:n]))
}
