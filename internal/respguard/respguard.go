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
var ErrTooLong = errors.New("node: reply too long or malformed")

// Limits of a Conn, over one reply with everything nested in it.
type Limits struct {
	Bulk     int64 // bytes of the strings (bulk, verbatim, blob error) of one reply
	Elements int64 // elements of the arrays, sets, pushes and maps (two per pair) of one reply
}

// headerCap is the longest header kept: a type byte, a sign, 19 digits and
// CRLF fit; longer lines matter only when they are lengths (then too long).
const headerCap = 24

// Conn is a net.Conn whose reads fail with ErrTooLong once the stream
// announces more than its limits; the connection is then closed. Streamed
// strings and aggregates and attributes (RESP3 forms Redis does not send
// to a lock client) are refused too.
type Conn struct {
	net.Conn
	limits Limits
	skip   int64   // bytes of a bulk payload (and its CRLF) still to pass
	open   []int64 // elements still to come in each open aggregate, outermost first
	elems  int64   // elements announced in the current reply
	bytes  int64   // string bytes announced in the current reply
	line   []byte  // the header being read, up to headerCap bytes
	long   bool    // the header being read is longer than headerCap
	last   byte    // the last byte of the line so far, and the one before it
	before byte
	err    error
	ended  int // replies read whole

	// Reply accounting of NewOrdered (nil order: none).
	order      *order
	cur        msg     // the reply being read
	wantFirst  bool    // the next header at depth 1 is the first element's
	capture    *[]byte // where the bulk payload passing is kept, if short
	replyEnded bool
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
			if c.capture != nil { // the payload, without its CRLF
				*c.capture = appendCapped(*c.capture, b[:min(k, max(c.skip-2, 0))])
			}
			c.skip -= k
			b = b[k:]
			if c.skip == 0 {
				c.capture = nil
				c.done()
				if err := c.settle(); err != nil {
					return err
				}
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i+1]
		}
		b = b[len(chunk):]
		c.keep(chunk)
		if err := c.fixedForm(); err != nil {
			return err
		}
		if i < 0 {
			return nil // the header goes on in the next read
		}
		err := c.header()
		c.line, c.long, c.last, c.before = c.line[:0], false, 0, 0
		if err != nil {
			return err
		}
		if err := c.settle(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Conn) keep(chunk []byte) {
	if len(chunk) >= 2 {
		c.before = chunk[len(chunk)-2]
	} else {
		c.before = c.last
	}
	c.last = chunk[len(chunk)-1]
	if room := headerCap - len(c.line); len(chunk) > room {
		c.line = append(c.line, chunk[:room]...)
		c.long = true
		return
	}
	c.line = append(c.line, chunk...)
}

// fixedForm checks, byte by byte, the values that rueidis reads by size
// and not up to the line's end (null, boolean, end of a stream): a byte
// off their form would make it take the rest for another reply.
func (c *Conn) fixedForm() error {
	var form string
	switch c.line[0] {
	case '|', ';', '.': // refused at their first byte: rueidis reads '.' by size
		return fmt.Errorf("%w: unsupported %q", ErrTooLong, c.line)
	case '_':
		form = "_\r\n"
	case '#':
		form = "#t\r\n"
		if len(c.line) > 1 && c.line[1] == 'f' {
			form = "#f\r\n"
		}
	default:
		return nil
	}
	if len(c.line) > len(form) || string(c.line) != form[:len(c.line)] {
		return fmt.Errorf("%w: %q is not %q", ErrTooLong, c.line, form)
	}
	return nil
}

// header checks the complete header line c.line and follows the reply's
// shape: a bulk's payload to pass, an aggregate's elements to come.
func (c *Conn) header() error {
	if c.before != '\r' || len(c.line) < 3 {
		// Clients disagree on such lines (rueidis trims two bytes from a
		// line whatever they are): refused, so that none reads a length
		// other than the one checked here.
		return fmt.Errorf("%w: a line without CR LF, or empty: %q", ErrTooLong, c.line)
	}
	kind := c.line[0]
	depth := len(c.open)
	if c.order != nil {
		if err := c.noteHeader(kind, depth); err != nil {
			return err
		}
	}
	switch kind {
	case '$', '=', '!', '*', '~', '>', '%':
	default:
		c.done() // a value on one line: a simple string, an error, a number...
		return nil
	}
	if c.long {
		return fmt.Errorf("%w: a length header over %d bytes", ErrTooLong, headerCap)
	}
	digits := string(bytes.TrimRight(c.line[1:], "\r\n"))
	if digits == "-1" { // null
		c.capture = nil
		c.done()
		return nil
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: %q", ErrTooLong, c.line)
	}
	switch kind {
	case '$', '=', '!':
		if c.bytes += n; c.bytes > c.limits.Bulk {
			return fmt.Errorf("%w: %q: over %d string bytes in one reply", ErrTooLong, c.line, c.limits.Bulk)
		}
		c.skip = n + 2
		if c.capture != nil {
			if n > headerCap {
				c.capture = nil // too long to be a word order looks for
			} else {
				*c.capture = (*c.capture)[:0]
			}
		}
		return nil
	case '%':
		n = 2 * min(n, c.limits.Elements+1)
	}
	if c.elems += n; c.elems > c.limits.Elements {
		return fmt.Errorf("%w: %q: over %d elements in one reply", ErrTooLong, c.line, c.limits.Elements)
	}
	if depth == 0 {
		c.cur.n, c.wantFirst = n, n > 0
	}
	if n == 0 {
		c.done()
	} else {
		c.open = append(c.open, n)
	}
	return nil
}

// done notes that a value ended: it counts against the aggregates it
// completes, and when none is left open the reply is over.
func (c *Conn) done() {
	for len(c.open) > 0 {
		top := len(c.open) - 1
		if c.open[top]--; c.open[top] > 0 {
			return
		}
		c.open = c.open[:top]
	}
	c.elems, c.bytes = 0, 0
	c.ended++
	c.replyEnded = true
}

// FirstReply is the prefix of b that holds its first whole reply, as a
// Conn reads it; all of b when no reply ends in it or a Conn would refuse
// it.
func FirstReply(b []byte) []byte {
	c := New(nil, Limits{Bulk: 1 << 62, Elements: 1 << 61})
	for i := range b {
		if c.scan(b[i:i+1]) != nil {
			return b
		}
		if c.ended > 0 {
			return b[:i+1]
		}
	}
	return b
}
