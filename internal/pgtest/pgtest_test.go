package pgtest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A started server accepts TCP connections on its port; Close stops it and
// removes its files.
func TestStartClose(t *testing.T) {
	s := StartT(t)
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Minute)
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr(), err)
	}
	_ = conn.Close()
	dir := s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", dir, err)
	}
	if conn, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("server still accepts connections after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Without the binaries Start says so with ErrNotFound; with Debian's layout
// it finds the newest version's directory.
func TestFindBin(t *testing.T) {
	t.Setenv("PG_BIN", "")
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	saved := debianBins
	t.Cleanup(func() { debianBins = saved })
	debianBins = filepath.Join(root, "*", "bin")
	if _, err := findBin(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("findBin without binaries = %v, want ErrNotFound", err)
	}
	if _, err := Start(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Start without binaries = %v, want ErrNotFound", err)
	}
	for _, v := range []string{"9", "15", "13"} {
		d := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(d, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := findBin()
	if want := filepath.Join(root, "15", "bin"); err != nil || got != want {
		t.Fatalf("findBin = %q, %v; want %q", got, err, want)
	}
}

// recordingTB stops like testing.T's Skip and Fatal, and records which.
type recordingTB struct {
	testing.TB
	skipped, failed bool
}

func (r *recordingTB) Skip(...any)  { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Fatal(...any) { r.failed = true; runtime.Goexit() }

// Without PostgreSQL StartT skips, and fails when CI=true.
func TestStartTWithoutPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short skips every server start before it looks for the binary")
	}
	t.Setenv("PG_BIN", "")
	t.Setenv("PATH", t.TempDir())
	saved := debianBins
	t.Cleanup(func() { debianBins = saved })
	debianBins = filepath.Join(t.TempDir(), "*", "bin")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recordingTB{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); StartT(r) }()
		<-done
		if want := ci == "true"; r.failed != want || r.skipped == want {
			t.Errorf("CI=%q: skipped %v, failed %v", ci, r.skipped, r.failed)
		}
	}
}
