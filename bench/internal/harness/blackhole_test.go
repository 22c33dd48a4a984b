package harness

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestBlackholeAcceptsButNeverAnswers(t *testing.T) {
	b, err := StartBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read = %d bytes, %v; want nothing until the deadline", n, err)
	}
	deadline := time.Now().Add(time.Second)
	for b.Conns() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if b.Conns() != 1 {
		t.Fatalf("Conns = %d, want 1", b.Conns())
	}
}

func TestBlackholeTimesOutGoRedis(t *testing.T) {
	b, err := StartBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rc := redis.NewClient(&redis.Options{Addr: b.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = rc.Ping(ctx).Err()
	if err == nil {
		t.Fatal("PING through the blackhole succeeded")
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("PING failed after %s (%v): the blackhole answered or refused instead of staying silent", el, err)
	}
}

func TestBlackholeCloseDropsConnections(t *testing.T) {
	b, err := StartBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(time.Second)
	for b.Conns() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close hung with a connection open")
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Close = %v, want EOF/reset", err)
	}
}
