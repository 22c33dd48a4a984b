package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// A malformed address is the user's typing: a usage error naming the
// address, not "nodes unreachable" after a dial.
func TestNodeAddressMalformed(t *testing.T) {
	for _, tc := range []struct{ list, want string }{
		{"host:notaport,127.0.0.1:1,127.0.0.1:2", `node "host:notaport" has a malformed port "notaport"`},
		{"127.0.0.1:99999,127.0.0.1:1,127.0.0.1:2", `node "127.0.0.1:99999" has a malformed port "99999"`},
		{"127.0.0.1:0,127.0.0.1:1,127.0.0.1:2", `node "127.0.0.1:0" has a malformed port "0"`},
		{"redis://127.0.0.1:99999,127.0.0.1:1,127.0.0.1:2", `node "redis://127.0.0.1:99999" has a malformed port "99999"`},
		{":6379,127.0.0.1:1,127.0.0.1:2", `node ":6379" has no host`},
	} {
		for _, cmd := range []string{"exec", "ls", "doctor"} {
			args := []string{cmd}
			if cmd == "exec" {
				args = append(args, "-n", "k", "--", "true")
			}
			r := runBin(t, strings.Split(tc.list, ","), args...)
			if r.code != exitUsage {
				t.Errorf("%s with %s: exit %d, want %d", cmd, tc.list, r.code, exitUsage)
			}
			oneLine(t, r.stderr, tc.want)
		}
	}
}

// A stray comma is a usage error: it is more often a node left out than a
// style, and it must not leave a one-node list running with quorum 1.
func TestNodeListEmptyEntry(t *testing.T) {
	for _, list := range []string{"127.0.0.1:1,127.0.0.1:2,", "127.0.0.1:1,,127.0.0.1:2,127.0.0.1:3", "127.0.0.1:1,"} {
		r := runBin(t, nil, "ls", "--nodes", list)
		if r.code != exitUsage {
			t.Errorf("--nodes %q: exit %d, want %d", list, r.code, exitUsage)
		}
		oneLine(t, r.stderr, "the node list has an empty entry")
	}
}

// One node is no quorum worth the name: refused unless --single-node, and
// then said on stderr. The embedded demo needs no nodes at all.
func TestSingleNodeNeedsFlag(t *testing.T) {
	c := redistest.StartT(t, 1)
	for _, args := range [][]string{
		{"exec", "-n", "job:one", "--", "true"},
		{"ls"},
		{"inspect", "job:one"},
		{"doctor"},
	} {
		r := runBin(t, c.Addrs(), args...)
		if r.code != exitUsage {
			t.Errorf("%v on one node: exit %d, want %d", args, r.code, exitUsage)
		}
		oneLine(t, r.stderr, "only one node ("+c.Addrs()[0]+"): a quorum of 1 does not survive")
		if !strings.Contains(r.stderr, "--single-node") {
			t.Errorf("%v: stderr %q does not name --single-node", args, r.stderr)
		}
	}
	r := runBin(t, c.Addrs(), "exec", "--single-node", "-n", "job:one", "--", "true")
	if r.code != exitOK {
		t.Errorf("exec --single-node: exit %d, want 0", r.code)
	}
	oneLine(t, r.stderr, "warning: one node ("+c.Addrs()[0]+"), quorum 1")
	r = runBin(t, nil, "demo", "--duration", "1s")
	if r.code != exitOK || strings.Contains(r.stderr, "one node") {
		t.Errorf("embedded demo: exit %d, stderr %q; want 0 and no warning", r.code, r.stderr)
	}
}

// A node file that holds a password and that others may read gets a
// warning; one of mode 0600, or without a password, gets none.
func TestNodesFileModeWarning(t *testing.T) {
	c := redistest.StartT(t, 3)
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	var withPass, plain []string
	for _, a := range c.Addrs() {
		withPass = append(withPass, "redis://default:s3cret@"+a)
		plain = append(plain, a)
	}
	for _, cl := range c.Clients() {
		configSet(t, cl, "requirepass", "s3cret")
	}
	open := write("open", strings.Join(withPass, "\n")+"\n", 0o644)
	r := runBin(t, nil, "ls", "--nodes-file", open)
	if r.code != exitOK {
		t.Errorf("ls --nodes-file (0644): exit %d, want 0", r.code)
	}
	oneLine(t, r.stderr, "redlock ls: warning: "+open+" holds a password and other users may read it (mode 0644): chmod 600 "+open)
	if strings.Contains(r.stderr, "s3cret") {
		t.Errorf("the warning shows the password: %q", r.stderr)
	}
	closed := write("closed", strings.Join(withPass, "\n")+"\n", 0o600)
	noPass := write("nopass", strings.Join(plain, "\n")+"\n", 0o644)
	for _, f := range []string{closed, noPass} {
		r := runBin(t, nil, "doctor", "--nodes-file", f)
		if strings.Contains(r.stderr, "warning") {
			t.Errorf("doctor --nodes-file %s: stderr %q, want no warning", f, r.stderr)
		}
	}
}

// A refused password is said as such: "authentication failed", not
// "unreachable", in doctor and in the commands that need a quorum.
func TestWrongPasswordIsAuthenticationFailed(t *testing.T) {
	c := redistest.StartT(t, 3)
	var wrong []string
	for i, cl := range c.Clients() {
		configSet(t, cl, "requirepass", "s3cret")
		wrong = append(wrong, "redis://default:wrong@"+c.Addrs()[i])
	}
	r := runBin(t, wrong, "exec", "-n", "k", "--", "true")
	if r.code != exitUnreachable {
		t.Errorf("exec: exit %d, want %d", r.code, exitUnreachable)
	}
	oneLine(t, r.stderr, c.Addrs()[0]+": authentication failed (WRONGPASS")
	r = runBin(t, wrong, "doctor")
	if r.code != exitUnreachable {
		t.Errorf("doctor: exit %d, want %d", r.code, exitUnreachable)
	}
	if line := doctorLine(r.stdout, 0); !strings.Contains(line, "authentication failed (WRONGPASS") || strings.Contains(line, "unreachable") {
		t.Errorf("doctor's n1 line %q: want authentication failed, not unreachable", line)
	}
	r = runBin(t, c.Addrs(), "ls") // no password at all
	if r.code != exitUnreachable {
		t.Errorf("ls without a password: exit %d, want %d", r.code, exitUnreachable)
	}
	oneLine(t, r.stderr, "authentication failed (NOAUTH")
}
