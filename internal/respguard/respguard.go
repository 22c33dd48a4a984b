// Package respguard bounds the lengths a RESP stream may announce. Redis
// clients allocate a reply's announced length before reading it: a node
// that sends "$100000000000000" makes go-redis ask the runtime for 100 TB,
// a fatal error no recover can catch, and rueidis panics on its own
// goroutine. A Conn reads the headers as they pass and fails the read of
// one that announces more than the limits, before the client sees it.
package respguard

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// ErrTooLong is wrapped by the read error of a reply that announces a
// length beyond the limits, or a malformed length.
var ErrTooLong = errors.New("node: reply announces a length beyond the limit")

// Limits of a Conn.
type Limits struct {
	Bulk     int64 // bytes of one bulk string, verbatim string or blob error
	Elements int64 // elements of one array, set, push or attribute; pairs of one map
}

// headerCap is the longest header kept: a type byte, a sign, 19 digits and
// CRLF fit; longer lines matter only when they are lengths (then too long).
const headerCap = 24

// Conn is a net.Conn whose reads fail with ErrTooLong once the stream
// announces a length beyond its limits; the connection is then closed.
type Conn struct {
	net.Conn
	limits Limits
	skip   int64  // bytes of a bulk payload (and its CRLF) still to pass
	line   []byte // the header being read, up to headerCap bytes
	long   bool   // the header being read is longer than headerCap
	err    error
}

// New wraps c.
func New(c net.Conn, limits Limits) *Conn {
	return &Conn{Conn: c, limits: limits, line: make([]byte, 0, headerCap)}
}

func (c *Conn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if verr := c.scan(p[:n]); verr != nil {
		c.err = verr
		_ = c.Conn.Close()
		return 0, verr
	}
	return n, err
}

// scan follows the stream through b: header lines and bulk payloads.
func (c *Conn) scan(b []byte) error {
	for len(b) > 0 {
		if c.skip > 0 {
			k := min(c.skip, int64(len(b)))
			c.skip -= k
			b = b[k:]
			continue
		}
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i+1]
		}
		b = b[len(chunk):]
		c.keep(chunk)
		if i < 0 {
			return nil // the header goes on in the next read
		}
		err := c.header()
		c.line, c.long = c.line[:0], false
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Conn) keep(chunk []byte) {
	if room := headerCap - len(c.line); len(chunk) > room {
		c.line = append(c.line, chunk[:room]...)
		c.long = true
		return
	}
	c.line = append(c.line, chunk...)
}

// header checks the complete header line c.line and, for a bulk, notes
// how many payload bytes follow.
func (c *Conn) header() error {
	if len(c.line) == 0 {
		return nil
	}
	var limit int64
	bulk := false
	switch c.line[0] {
	case '$', '=', '!', ';':
		limit, bulk = c.limits.Bulk, true
	case '*', '%', '~', '>', '|':
		limit = c.limits.Elements
	default:
		return nil // a line of its own: a simple string, an error, a number...
	}
	if c.long {
		return fmt.Errorf("%w: a length header over %d bytes", ErrTooLong, headerCap)
	}
	digits := string(bytes.TrimRight(c.line[1:], "\r\n"))
	if digits == "?" || digits == "-1" { // streamed, or null
		return nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || n > limit {
		return fmt.Errorf("%w: %q (at most %d)", ErrTooLong, c.line, limit)
	}
	if bulk && !(c.line[0] == ';' && n == 0) { // ";0" ends a streamed string
		c.skip = n + 2
	}
	return nil
}
