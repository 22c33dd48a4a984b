package respguard

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// chunked is a connection whose reads return at most n bytes of r.
type chunked struct {
	net.Conn
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
func (c *chunked) Close() error               { return nil }

func readAll(stream string, chunk int) (string, error) {
	c := New(&chunked{r: strings.NewReader(stream), n: chunk}, Limits{Bulk: 16, Elements: 4})
	b, err := io.ReadAll(c)
	return string(b), err
}

// Headers are checked however the stream is cut into reads, a bulk's
// payload is never taken for a header, and the limits hold for one reply
// with everything nested in it, then start again.
func TestLengthsAreCheckedAcrossReads(t *testing.T) {
	good := "*3\r\n$5\r\n*9999\r\n$-1\r\n+OK $99999\r\n:12\r\n#t\r\n#f\r\n_\r\n%1\r\n$16\r\n0123456789abcdef\r\n_\r\n*-1\r\n" +
		"$16\r\n0123456789abcdef\r\n*2\r\n*0\r\n*2\r\n:1\r\n$0\r\n\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"
	bad := []string{"$17\r\n", "*5\r\n", "*1\r\n*2\r\n$1\r\nx\r\n$100000000000000\r\n", "$-2\r\n", "*1x\r\n",
		"$" + strings.Repeat("1", 40) + "\r\n", "*2\r\n*2\r\n*2\r\n", "*2\r\n$9\r\n123456789\r\n$8\r\n", "%3\r\n", "|1\r\n", "$?\r\n", "*22\n$1\r\n0\r\n", "+OK\n", "\r\n", "#\xd6\x820_", "#tt\r\n", "_x\r\n", "........%"}
	for _, chunk := range []int{1, 2, 3, 7, 4096} {
		if got, err := readAll(good, chunk); err != nil || got != good {
			t.Errorf("chunk %d: read %q, %v; want the stream whole", chunk, got, err)
		}
		for _, s := range bad {
			if _, err := readAll(s, chunk); !errors.Is(err, ErrTooLong) {
				t.Errorf("chunk %d: %q: err = %v, want ErrTooLong", chunk, s, err)
			}
		}
	}
}

// FirstReply cuts after the first whole reply, nested ones included.
func TestFirstReply(t *testing.T) {
	for in, want := range map[string]string{
		"-1\r\n*0\r\n":                         "-1\r\n",
		"*2\r\n$1\r\n\n\r\n*1\r\n:1\r\n:9\r\n": "*2\r\n$1\r\n\n\r\n*1\r\n:1\r\n",
		"*3\r\n:1\r\n":                         "*3\r\n:1\r\n",
		"$-1\r\n+x":                            "$-1\r\n",
	} {
		if got := string(FirstReply([]byte(in))); got != want {
			t.Errorf("FirstReply(%q) = %q, want %q", in, got, want)
		}
	}
}

func (c *chunked) Write(p []byte) (int, error) { return len(p), nil }

// exchange writes cmds (one Write each) on an ordered Conn, then reads
// replies, and returns the read error.
func exchange(cmds []string, replies string) error {
	c := NewOrdered(&chunked{r: strings.NewReader(replies), n: 3}, Limits{Bulk: 1 << 20, Elements: 1 << 10})
	for _, cmd := range cmds {
		_, _ = c.Write([]byte(cmd))
	}
	_, err := io.ReadAll(c)
	return err
}

// An ordered Conn lets through one reply per command written (pipelined
// writes, pushes and subscription confirmations as rueidis reads them) and
// fails the read of one more.
func TestOrderedConnRefusesUnaskedReplies(t *testing.T) {
	const (
		hello3 = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
		ping   = "*1\r\n$4\r\nPING\r\n"
		sub2   = "*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$1\r\nb\r\n"
		conf   = ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
		msg    = ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n"
		r2conf = "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
		r2msg  = "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n"
		r2pong = "*2\r\n$4\r\npong\r\n$0\r\n\r\n"
	)
	for _, tc := range []struct {
		name    string
		cmds    []string
		replies string
		unasked bool
	}{
		{"one each", []string{ping, ping}, "+PONG\r\n:1\r\n", false},
		{"pipelined in one write", []string{ping + ping + ping}, "+PONG\r\n*2\r\n:1\r\n$2\r\nok\r\n$-1\r\n", false},
		{"command split across writes", []string{"*1\r\n$4\r\nPI", "NG\r\n"}, "+PONG\r\n", false},
		{"answered twice", []string{ping}, ":1\r\n:1\r\n", true},
		{"answer with nothing asked", nil, "+OK\r\n", true},
		{"pushes are no replies", []string{hello3, ping}, "%0\r\n" + msg + "+PONG\r\n" + msg, false},
		{"confirmations answer a subscribe", []string{hello3, sub2, ping}, "%0\r\n" + conf + conf + msg + "+PONG\r\n", false},
		{"a confirmation too many", []string{hello3, sub2}, "%0\r\n" + conf + conf + conf, true},
		{"a confirmation without subscribe", []string{hello3, ping}, "%0\r\n" + conf, true},
		{"RESP2 subscriber: arrays are pushes but pong", []string{sub2, ping}, r2conf + r2conf + r2msg + r2pong, false},
		{"RESP2 subscriber: a pong too many", []string{sub2, ping}, r2conf + r2conf + r2pong + r2pong, true},
		{"a push nested in a reply", []string{ping}, "*2\r\n:1\r\n" + msg, true},
	} {
		err := exchange(tc.cmds, tc.replies)
		if got := errors.Is(err, ErrUnasked); got != tc.unasked {
			t.Errorf("%s: read error %v, want unasked %v", tc.name, err, tc.unasked)
		}
	}
}
