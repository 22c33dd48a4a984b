package main

import (
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

func TestLsListsHeldLocks(t *testing.T) {
	c := redistest.StartT(t, 3)
	client := lockClient(t, c)
	a := hold(t, client, "job-a", 30*time.Second)
	hold(t, client, "job-b", 30*time.Second)

	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	for _, key := range []string{"job-a", "job-b"} {
		row := rowOf(r.stdout, key)
		if !strings.Contains(row, "yes (3/3)") {
			t.Errorf("%s: row %q, want majority yes (3/3)", key, row)
		}
	}
	token, err := c.Clients()[0].Get(t.Context(), "lock:{job-a}").Result()
	if err != nil || a == nil {
		t.Fatalf("job-a's token on node 0: %v", err)
	}
	if row := rowOf(r.stdout, "job-a"); !strings.Contains(row, token[:6]) {
		t.Errorf("job-a row %q lacks the holder's token prefix %s", row, token[:6])
	}
	if strings.Contains(r.stdout, token) {
		t.Error("ls printed a whole token")
	}
	if strings.Contains(r.stdout, ":fence") {
		t.Error("ls listed a fence counter")
	}

	r = runBin(t, c.Addrs(), "ls", "job-b*")
	if rowOf(r.stdout, "job-b") == "" || rowOf(r.stdout, "job-a") != "" {
		t.Errorf("ls job-b*: %q, want job-b only", r.stdout)
	}

	// A node down: still listed, majority from the other two.
	if err := c.Nodes()[2].Kill(); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, c.Addrs(), "ls", "job-a")
	if row := rowOf(r.stdout, "job-a"); r.code != 0 || !strings.Contains(row, "down") || !strings.Contains(row, "yes (2/3)") {
		t.Errorf("with n3 down: exit %d, row %q", r.code, row)
	}
}

func TestLsEmpty(t *testing.T) {
	c := redistest.StartT(t, 1)
	r := runBin(t, c.Addrs(), "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "no locks held") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

func rowOf(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == key {
			return line
		}
	}
	return ""
}
