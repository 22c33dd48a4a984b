package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestAppendCommand(t *testing.T) {
	b := appendArrayHeader(nil, 6)
	b = appendBulk(b, "SET")
	b = appendBulkKey(b, "k1")
	b = appendBulk(b, []byte("tok"))
	b = appendBulk(b, "NX")
	b = appendBulk(b, "PX")
	b = appendBulk(b, "")
	want := "*6\r\n$3\r\nSET\r\n$12\r\nbench:raw:k1\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$0\r\n\r\n"
	if string(b) != want {
		t.Errorf("command = %q, want %q", b, want)
	}
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want reply
	}{
		{"+OK\r\n", reply{kind: '+', str: []byte("OK")}},
		{"-NOSCRIPT No matching script\r\n", reply{kind: '-', str: []byte("NOSCRIPT No matching script")}},
		{":1\r\n", reply{kind: ':', num: 1}},
		{":-42\r\n", reply{kind: ':', num: -42}},
		{":9223372036854775807\r\n", reply{kind: ':', num: 9223372036854775807}},
		{"$3\r\nabc\r\n", reply{kind: '$', str: []byte("abc"), num: 3}},
		{"$4\r\na\r\nb\r\n", reply{kind: '$', str: []byte("a\r\nb"), num: 4}}, // binary-safe
		{"$0\r\n\r\n", reply{kind: '$', str: []byte{}, num: 0}},
		{"$-1\r\n", reply{kind: '$', null: true}},
		{"*-1\r\n", reply{kind: '*', null: true}},
		{"*0\r\n", reply{kind: '*'}},
		{"*3\r\n:1\r\n$1\r\nx\r\n*1\r\n+OK\r\n", reply{kind: '*', num: 3}},
	} {
		rr := newRESPReader(strings.NewReader(tc.in + "+NEXT\r\n"))
		got, err := rr.read()
		if err != nil {
			t.Errorf("read(%q): %v", tc.in, err)
			continue
		}
		if got.kind != tc.want.kind || string(got.str) != string(tc.want.str) || (got.str == nil) != (tc.want.str == nil) ||
			got.num != tc.want.num || got.null != tc.want.null {
			t.Errorf("read(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		// The whole reply was consumed: the next one parses.
		if next, err := rr.read(); err != nil || string(next.str) != "NEXT" {
			t.Errorf("after %q: next reply %+v, %v", tc.in, next, err)
		}
	}
	if r, _ := newRESPReader(strings.NewReader("+OK\r\n")).read(); !r.isOK() {
		t.Errorf("+OK is not isOK")
	}
	if r, _ := newRESPReader(strings.NewReader("$2\r\nOK\r\n")).read(); r.isOK() {
		t.Errorf("bulk OK is isOK (only the simple string means SET succeeded)")
	}
}

func TestReadReplyBadInput(t *testing.T) {
	deep := strings.Repeat("*1\r\n", maxArrayDepth+1) + ":1\r\n"
	for _, in := range []string{
		"\r\n",                                   // empty line
		"OK\r\n",                                 // no type byte
		"!3\r\n",                                 // unknown type
		"+OK\n",                                  // LF without CR
		":12a\r\n",                               // not a number
		":\r\n",                                  // empty number
		":-\r\n",                                 // sign only
		":99999999999999999999\r\n",              // too long
		":9223372036854775808\r\n",               // overflows int64
		"$-2\r\n",                                // negative length
		"$2000000\r\n",                           // over maxBulkLen
		"$3\r\nabcd\r\n",                         // payload longer than announced
		"*-5\r\n",                                // negative count
		"*100000\r\n",                            // over maxArrayLen
		deep,                                     // nested too deep
		"+" + strings.Repeat("x", 5000) + "\r\n", // line over the buffer
	} {
		_, err := newRESPReader(strings.NewReader(in)).read()
		if !errors.Is(err, errProtocol) {
			t.Errorf("read(%.40q) error = %v, want errProtocol", in, err)
		}
	}
	// Cut short: the connection's error, not a protocol error or a hang.
	for _, in := range []string{"", "+OK", "$5\r\nab", "*2\r\n:1\r\n"} {
		_, err := newRESPReader(strings.NewReader(in)).read()
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read(%q) error = %v, want EOF or ErrUnexpectedEOF", in, err)
		}
	}
}

// TestRESPAllocationFree: writing a command and reading the replies of a
// cycle reuse their buffers.
func TestRESPAllocationFree(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	replies := "+OK\r\n$-1\r\n:1\r\n-ERR x\r\n$40\r\n" + strings.Repeat("a", 40) + "\r\n"
	src := strings.NewReader(replies)
	rr := newRESPReader(src)
	tok := []byte("0123456789abcdef0123456789abcdef")
	var b []byte
	allocs := testing.AllocsPerRun(100, func() {
		b = appendArrayHeader(b[:0], 6)
		b = appendBulk(b, "SET")
		b = appendBulkKey(b, "key:1")
		b = appendBulk(b, tok)
		b = appendBulk(b, "NX")
		b = appendBulk(b, "PX")
		b = appendBulk(b, "8000")
		src.Reset(replies)
		rr.r.Reset(src)
		for range 5 {
			if _, err := rr.read(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per command and 5 replies, want 0", allocs)
	}
}
