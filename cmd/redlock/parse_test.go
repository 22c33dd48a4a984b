package main

import (
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseAroundKey(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		key      string
		argv     []string
		nonblock bool
	}{
		{[]string{"k", "--", "echo", "hi"}, "k", []string{"echo", "hi"}, false},
		{[]string{"-n", "k", "--", "echo", "-n"}, "k", []string{"echo", "-n"}, true},
		{[]string{"k", "-n", "--", "echo"}, "k", []string{"echo"}, true},
		{[]string{"k", "echo", "-n"}, "k", []string{"echo", "-n"}, false},
	} {
		a, err := parseExec(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if a.key != tc.key || !slices.Equal(a.argv, tc.argv) || a.nonblock != tc.nonblock {
			t.Errorf("%v: key %q argv %q -n %v; want %q %q %v", tc.args, a.key, a.argv, a.nonblock, tc.key, tc.argv, tc.nonblock)
		}
	}
}

// KEY goes before "--": after it, the first word is CMD's, and taking it
// for KEY would run the wrong command under a lock nobody meant.
func TestParseMissingKeyBeforeDashes(t *testing.T) {
	for _, args := range [][]string{
		{"--", "echo", "hi"},
		{"-n", "--", "echo", "hi"},
		{"--", "k", "--", "echo"},
	} {
		_, err := parseExec(args, io.Discard)
		if code, msg := codeOf(err); code != exitUsage || !strings.Contains(msg, "missing KEY") {
			t.Errorf("%v: exit %d %q, want %d and \"missing KEY\"", args, code, msg, exitUsage)
		}
	}
}

func TestDescribeCommand(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"job"}, "job"},
		{[]string{"job", "-x"}, "job (with 1 argument)"},
		{[]string{"job", "-x", "y"}, "job (with 2 arguments)"},
	} {
		if got := describe(tc.argv); got != tc.want {
			t.Errorf("describe(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// A bare number is seconds, as flock(1) reads -w; -w 0 is -n.
func TestParseDurations(t *testing.T) {
	a, err := parseExec([]string{"-w", "5", "--ttl", "30", "--grace", "1.5", "k", "--", "true"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a.wait != 5*time.Second || a.ttl != 30*time.Second || a.grace != 1500*time.Millisecond || a.nonblock {
		t.Errorf("-w 5 --ttl 30 --grace 1.5: wait %s ttl %s grace %s nonblock %v", a.wait, a.ttl, a.grace, a.nonblock)
	}
	for _, w := range []string{"0", "0s", "0.0"} {
		a, err := parseExec([]string{"-w", w, "k", "--", "true"}, io.Discard)
		if err != nil || !a.nonblock {
			t.Errorf("-w %s: %v, nonblock %v; want -n", w, err, a != nil && a.nonblock)
		}
	}
	if a, err := parseExec([]string{"k", "--", "true"}, io.Discard); err != nil || a.nonblock || a.wait != 0 {
		t.Errorf("no -w: waits forever; got %+v %v", a, err)
	}
	for _, bad := range []string{"", "5x", "NaN", "Inf", "0x10", "1e300", "soon"} {
		if d, err := parseSeconds(bad); err == nil {
			t.Errorf("parseSeconds(%q) = %s, want an error", bad, d)
		}
	}
	if d, err := parseSeconds("1m30s"); err != nil || d != 90*time.Second {
		t.Errorf("1m30s: %s %v", d, err)
	}
}

func TestParseNodes(t *testing.T) {
	opts, err := parseNodes(" 127.0.0.1:1, redis://:pw@127.0.0.1:2/0 ")
	if err != nil || len(opts) != 2 || opts[0].Addr != "127.0.0.1:1" || opts[1].Password != "pw" || !opts[1].ContextTimeoutEnabled {
		t.Fatalf("parseNodes: %v %+v", err, opts)
	}
	for _, bad := range []string{"", ",", "localhost", "a:1,a:1", "redis://[::1", "a:1,b:2,", "a:notaport", "a:99999", ":1"} {
		if _, err := parseNodes(bad); err == nil {
			t.Errorf("parseNodes(%q): no error", bad)
		}
	}
}

func TestPercentile(t *testing.T) {
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("empty: %v", got)
	}
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	if p50, p99 := percentile(ds, 50), percentile(ds, 99); p50 != 50 || p99 != 99 {
		t.Errorf("p50 %d p99 %d, want 50 and 99", p50, p99)
	}
}

// A node address's password never shows in a message: not in the echo of
// an address that does not parse, not in the parser's own complaint.
func TestParseNodesRedactsPasswords(t *testing.T) {
	for _, bad := range []string{
		"redis://user:s3cret@127.0.0.1:bad",
		"redis://user:s3cr/et@127.0.0.1:1",           // '/' in the password: misread as the host
		"rediss://u:s3cr\"et/x@127.0.0.1:1",          // quoted by the parser
		"redis://user:s3cret@127.0.0.1:1/notanumber", // bad database
		"redis://:s3cret@[::1",
		"http://user:s3cret@127.0.0.1:1",
		"user:s3cret@127.0.0.1:1", // userinfo without a scheme
		"127.0.0.1:1,redis://user:s3cret@127.0.0.1:1,127.0.0.1:1",
	} {
		_, err := parseNodes(bad)
		if err == nil {
			t.Errorf("parseNodes(%q): no error", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cr") {
			t.Errorf("parseNodes(%q) = %q: shows the password", bad, err)
		}
	}
}

// Whatever the node list, parseNodes returns nodes with a host and a port
// from 1 to 65535, or an error; it never panics.
func FuzzParseNodes(f *testing.F) {
	for _, s := range []string{"127.0.0.1:1,127.0.0.1:2", "a:1,", "host:notaport", "127.0.0.1:99999", "redis://:pw@h:1/0", "[::1]:6379", ",", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		opts, err := parseNodes(spec)
		if err != nil {
			return
		}
		for _, o := range opts {
			host, port, err := net.SplitHostPort(o.Addr)
			p, perr := strconv.ParseUint(port, 10, 16)
			if err != nil || host == "" || perr != nil || p == 0 {
				t.Fatalf("parseNodes(%q) accepted %q", spec, o.Addr)
			}
		}
	})
}
