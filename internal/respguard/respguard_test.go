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
