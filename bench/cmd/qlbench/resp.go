package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RESP2 by hand for the raw floor: commands are appended to a reused byte
// slice, replies are parsed from a bufio.Reader into a reused scratch
// buffer, so a steady-state cycle allocates nothing.

// errProtocol is returned (wrapped) for a reply that is not valid RESP2 or
// exceeds the parser's limits.
var errProtocol = errors.New("resp: protocol error")

const (
	maxBulkLen    = 1 << 20 // the raw floor reads script hashes and short values only
	maxArrayLen   = 1 << 16
	maxArrayDepth = 8
)

// appendArrayHeader appends "*n\r\n", the header of a command of n arguments.
func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulk appends one argument as a bulk string: "$len\r\ns\r\n".
func appendBulk[T string | []byte](b []byte, s T) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// reply is one parsed RESP2 reply. str is valid until the next read on the
// same respReader.
type reply struct {
	kind byte   // '+' simple string, '-' error, ':' integer, '$' bulk, '*' array
	str  []byte // '+', '-' and non-null '$'
	num  int64  // ':' value; '$' and '*' length
	null bool   // "$-1" or "*-1"
	// head is a '*' reply's first element when that is an integer
	// (quorumlock's acquire script answers {1, ...} when granted).
	head    int64
	hasHead bool
}

// isOK reports a "+OK" simple string.
func (r reply) isOK() bool { return r.kind == '+' && string(r.str) == "OK" }

// respReader reads replies from one connection.
type respReader struct {
	r       *bufio.Reader
	scratch []byte // bulk payloads; grows to the largest one seen, then reused
}

func newRESPReader(r io.Reader) *respReader {
	return &respReader{r: bufio.NewReader(r)}
}

// read parses one reply. An array's elements are read and discarded, but
// for its first when that is an integer (head).
func (rr *respReader) read() (reply, error) { return rr.readDepth(0) }

func (rr *respReader) readDepth(depth int) (reply, error) {
	line, err := rr.line()
	if err != nil {
		return reply{}, err
	}
	if len(line) == 0 {
		return reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	rp := reply{kind: line[0]}
	body := line[1:]
	switch rp.kind {
	case '+', '-':
		rp.str = body
		return rp, nil
	case ':':
		rp.num, err = parseInt(body)
		return rp, err
	case '$':
		n, err := parseLen(body, maxBulkLen, "bulk")
		switch {
		case err != nil:
			return reply{}, err
		case n == -1:
			rp.null = true
			return rp, nil
		}
		rp.num = n
		if cap(rr.scratch) < int(n)+2 {
			rr.scratch = make([]byte, int(n)+2)
		}
		buf := rr.scratch[:n+2]
		if _, err := io.ReadFull(rr.r, buf); err != nil {
			return reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return reply{}, fmt.Errorf("%w: bulk string not terminated by CRLF", errProtocol)
		}
		rp.str = buf[:n]
		return rp, nil
	case '*':
		n, err := parseLen(body, maxArrayLen, "array")
		switch {
		case err != nil:
			return reply{}, err
		case n == -1:
			rp.null = true
			return rp, nil
		}
		if depth >= maxArrayDepth {
			return reply{}, fmt.Errorf("%w: arrays nested deeper than %d", errProtocol, maxArrayDepth)
		}
		for i := range n {
			e, err := rr.readDepth(depth + 1)
			if err != nil {
				return reply{}, err
			}
			if i == 0 && e.kind == ':' {
				rp.head, rp.hasHead = e.num, true
			}
		}
		rp.num = n
		return rp, nil
	default:
		return reply{}, fmt.Errorf("%w: unknown reply type %q", errProtocol, rp.kind)
	}
}

// line returns the next line without its CRLF; it is valid until the next
// read.
func (rr *respReader) line() ([]byte, error) {
	line, err := rr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, rr.r.Size())
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}

// parseInt parses a RESP integer (optional '-', then decimal digits)
// without converting to a string.
// parseLen parses the length of a bulk string or array: -1 (null) or 0 to
// limit.
func parseLen(b []byte, limit int64, what string) (int64, error) {
	n, err := parseInt(b)
	if err != nil {
		return 0, err
	}
	if n < -1 || n > limit {
		return 0, fmt.Errorf("%w: %s length %d", errProtocol, what, n)
	}
	return n, nil
}

func parseInt(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, fmt.Errorf("%w: bad integer", errProtocol)
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad integer", errProtocol)
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, fmt.Errorf("%w: integer overflows int64", errProtocol)
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, nil
}
