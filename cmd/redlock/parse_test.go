package main

import (
	"io"
	"slices"
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
		{[]string{"--", "k", "-n"}, "k", []string{"-n"}, false},
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

func TestParseNodes(t *testing.T) {
	opts, err := parseNodes(" 127.0.0.1:1, redis://:pw@127.0.0.1:2/0 ,")
	if err != nil || len(opts) != 2 || opts[0].Addr != "127.0.0.1:1" || opts[1].Password != "pw" || !opts[1].ContextTimeoutEnabled {
		t.Fatalf("parseNodes: %v %+v", err, opts)
	}
	for _, bad := range []string{"", ",", "localhost", "a:1,a:1", "redis://[::1"} {
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
