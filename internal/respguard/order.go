package respguard

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrUnasked is wrapped by the read error of a reply that no command
// written on the connection asked for (see NewOrdered).
var ErrUnasked = errors.New("node: reply nobody asked for")

// order matches the replies read on a connection to the commands written
// on it, as rueidis does: rueidis panics on its reader goroutine, out of
// any caller's reach, on a reply it has no command for. Each command
// (a top-level array written) expects one reply. Pushes are not replies,
// except the confirmation of a SUBSCRIBE, which answers it; on a RESP2
// connection that subscribed (rueidis' Pub/Sub connection), an array is a
// push unless its first element is "pong", as rueidis reads it.
type order struct {
	mu      sync.Mutex
	pending []expect // commands written and not answered yet, oldest first
	skip    int      // confirmations of a multi-channel SUBSCRIBE still to pass
	resp3   bool     // HELLO 3 was written: pushes are '>' only
	subbed  bool     // a SUBSCRIBE was written
	off     bool     // the writes could not be followed: no check

	// The outgoing command being read.
	wline []byte
	wargs int // bulk arguments still to come
	wskip int // payload bytes (and CRLF) still to pass
	widx  int // index of the argument whose payload is passing
	wn    int // the command's arguments
	wname []byte
	warg1 []byte
}

// expect is what a command written expects.
type expect struct {
	sub      bool // SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: answered by a confirmation
	channels int
}

// NewOrdered wraps c as New does, and also fails the read of a reply that
// no command written on c asked for (ErrUnasked), for clients that match
// replies to commands in order and panic on one too many (rueidis).
func NewOrdered(c net.Conn, limits Limits) *Conn {
	g := New(c, limits)
	g.order = &order{}
	return g
}

func (c *Conn) Write(p []byte) (int, error) {
	if c.order != nil { // before the write: its reply may come at once
		c.order.wrote(p)
	}
	return c.Conn.Write(p)
}

// noteHeader notes what order needs of a header read at depth (the
// aggregates open around it).
func (c *Conn) noteHeader(kind byte, depth int) error {
	text := bytes.TrimRight(c.line[1:], "\r\n")
	switch depth {
	case 0:
		c.cur = msg{kind: kind, str: c.cur.str[:0], first: c.cur.first[:0]}
		c.wantFirst = false
		if kind == '+' {
			c.cur.str = append(c.cur.str, text...)
		} else if kind == '$' {
			c.capture = &c.cur.str
		}
	case 1:
		if kind == '>' {
			// rueidis, taking the server for Redis 6, would read more
			// messages into this one: refused, no lock reply nests a push.
			return fmt.Errorf("%w: a push nested in a reply", ErrUnasked)
		}
		if c.wantFirst {
			c.wantFirst = false
			c.cur.firstKind = kind
			if kind == '+' {
				c.cur.first = append(c.cur.first, text...)
			} else if kind == '$' {
				c.capture = &c.cur.first
			}
		}
	}
	return nil
}

// settle checks a reply that just ended against the commands written.
func (c *Conn) settle() error {
	if !c.replyEnded {
		return nil
	}
	c.replyEnded = false
	c.capture = nil
	if c.order == nil {
		return nil
	}
	return c.order.read(&c.cur)
}

// wrote follows the commands in b, written on the connection.
func (o *order) wrote(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(b) > 0 && !o.off {
		if o.wskip > 0 {
			k := min(o.wskip, len(b))
			payload := b[:k]
			if o.wskip <= 2 { // the CRLF after the payload
				payload = nil
			} else if k > o.wskip-2 {
				payload = payload[:o.wskip-2]
			}
			switch o.widx {
			case 0:
				o.wname = appendCapped(o.wname, payload)
			case 1:
				o.warg1 = appendCapped(o.warg1, payload)
			}
			o.wskip -= k
			b = b[k:]
			if o.wskip == 0 {
				o.widx++
				if o.wargs == 0 {
					o.command()
				}
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			o.wline = appendCapped(o.wline, b)
			return
		}
		o.wline = appendCapped(o.wline, b[:i+1])
		b = b[i+1:]
		o.writtenHeader()
		o.wline = o.wline[:0]
	}
}

func appendCapped(dst, b []byte) []byte {
	return append(dst, b[:min(len(b), max(headerCap-len(dst), 0))]...)
}

// writtenHeader reads the header line o.wline of a command or argument.
func (o *order) writtenHeader() {
	line := bytes.TrimSuffix(o.wline, []byte("\r\n"))
	n, ok := 0, len(line) > 1 && len(line) < headerCap
	if ok {
		_, err := fmt.Sscanf(string(line[1:]), "%d", &n)
		ok = err == nil && n >= 0
	}
	switch {
	case ok && o.wargs == 0 && line[0] == '*':
		o.wargs, o.wn, o.widx = n, n, 0
		o.wname, o.warg1 = o.wname[:0], o.warg1[:0]
		if n == 0 {
			o.command()
		}
	case ok && o.wargs > 0 && line[0] == '$':
		o.wargs--
		o.wskip = n + 2
	default:
		o.off = true // not commands as rueidis writes them
	}
}

// command notes the command just written.
func (o *order) command() {
	name := string(bytes.ToUpper(o.wname))
	switch name {
	case "HELLO":
		if string(o.warg1) == "3" {
			o.resp3 = true
		}
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE":
		o.subbed = true
		o.pending = append(o.pending, expect{sub: true, channels: o.wn - 1})
		return
	case "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE":
		// rueidis pairs these with a PING whose reply may come before
		// theirs; not followed. rueidisnode closes such connections instead.
		o.off = true
		return
	}
	o.pending = append(o.pending, expect{})
}

// msg is a whole message read, as far as order needs it.
type msg struct {
	kind      byte   // its type
	n         int64  // elements, when an aggregate (-1 for a null)
	str       []byte // its text, when a string of up to headerCap bytes
	firstKind byte   // an aggregate's first element's type
	first     []byte // its text, when a string of up to headerCap bytes
}

// read checks the message m against the commands written, and returns
// ErrUnasked for one no command asked for.
func (o *order) read(m *msg) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.off {
		return nil
	}
	aggregate := m.kind == '*' || m.kind == '~' || m.kind == '%' || m.kind == '>'
	push := m.kind == '>'
	if !push && aggregate && !o.resp3 && o.subbed && m.n > 0 {
		if err := textFirst(m); err != nil {
			return err
		}
		push = string(m.first) != "pong"
	}
	if push {
		if m.n < 2 {
			return nil // no kind: rueidis drops it
		}
		if err := textFirst(m); err != nil {
			return err
		}
		switch string(m.first) {
		case "subscribe", "psubscribe", "ssubscribe":
			switch {
			case o.skip > 0:
				o.skip--
			case len(o.pending) > 0 && o.pending[0].sub:
				o.skip = max(o.pending[0].channels-1, 0)
				o.pending = o.pending[1:]
			default:
				return fmt.Errorf("%w: a subscription confirmed without a SUBSCRIBE", ErrUnasked)
			}
		case "unsubscribe", "punsubscribe", "sunsubscribe":
			if o.skip > 0 {
				o.skip--
			}
		}
		return nil // messages, invalidations...
	}
	if len(o.pending) == 0 {
		return fmt.Errorf("%w: %c reply with no command waiting", ErrUnasked, m.kind)
	}
	if o.pending[0].sub && string(m.str) == "QUEUED" {
		return fmt.Errorf("%w: SUBSCRIBE answered QUEUED", ErrUnasked)
	}
	o.pending = o.pending[1:]
	return nil
}

// textFirst refuses a push whose kind is not text: rueidis reads the kind
// of other types in ways not worth following.
func textFirst(m *msg) error {
	if m.firstKind != '$' && m.firstKind != '+' {
		return fmt.Errorf("%w: a push whose kind is of type %q", ErrUnasked, m.firstKind)
	}
	return nil
}
