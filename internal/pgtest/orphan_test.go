package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHelperStartAndHang is not a test: run by TestKilledParentLeavesNoServer
// as a child process, it starts a server, prints its address and waits.
func TestHelperStartAndHang(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") != "1" {
		t.Skip("helper process")
	}
	s, err := Start(context.Background())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("addr", s.Addr(), s.dir)
	time.Sleep(10 * time.Minute)
}

// A process that started a server and dies by SIGKILL leaves no server
// running (the server gets SIGKILL with its parent's death).
func TestKilledParentLeavesNoServer(t *testing.T) {
	if _, err := findBin(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperStartAndHang$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var addr, dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "addr" {
			addr, dir = f[1], f[2]
			break
		}
	}
	if addr == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper did not start a server")
	}
	defer os.RemoveAll(dir) // SIGKILL leaves the files behind
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return // gone
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("server %s still accepts connections 2 minutes after its parent was killed", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
