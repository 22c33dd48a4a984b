package redisnode_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/quorumlock/internal/fakeresp"
	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/redisnode"
)

// Over a BoundedDialer, a reply announcing a length go-redis cannot
// allocate (past the runtime's limit, which panics, or below it, which is
// a fatal out-of-memory error) is ErrReplyTooLong, and so is a malformed
// length; a well-formed reply within the limits is read as before.
func TestBoundedDialerRefusesHugeLengths(t *testing.T) {
	huge := []string{"$1000000000000000\r\n", "$100000000000000\r\n", "*100000000000\r\n",
		"*2\r\n:1\r\n*1000000000000000\r\n", "*2\r\n$1\r\nx\r\n$9999999999\r\n", "$-7\r\n", "*12x\r\n"}
	for _, reply := range huge {
		srv, err := fakeresp.Start(fakeresp.Lying("", fakeresp.Fault{Reply: []byte(reply)}))
		if err != nil {
			t.Fatal(err)
		}
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, Dialer: redisnode.BoundedDialer(nil, nil)})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
		_, err = redisnode.New(rc).Inspect(ctx, "lock:{k}")
		cancel()
		_ = rc.Close()
		_ = srv.Close()
		if !errors.Is(err, node.ErrReplyTooLong) {
			t.Errorf("reply %q: err = %v, want ErrReplyTooLong", reply, err)
		}
	}
	srv, err := fakeresp.Start(fakeresp.Lying("run-1", fakeresp.Fault{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, Dialer: redisnode.BoundedDialer(nil, nil)})
	defer func() { _ = rc.Close() }()
	id, err := redisnode.New(rc).Identify(context.Background())
	if err != nil || id.ID != "run-1" || id.Eviction != "noeviction" {
		t.Fatalf("Identify = %+v, %v; want run-1, noeviction", id, err)
	}
}

// A node that answers each command twice, over a BoundedDialer: every
// call returns, the extra reply is never taken for the answer of another
// command (an Identify after it still reads the server's identity on a
// fresh connection or fails), and nothing panics.
func TestAnswersTwiceIsOnlyThatNodesError(t *testing.T) {
	twice := fakeresp.Fault{Name: "answers-twice"}
	for _, f := range fakeresp.Faults {
		if f.Name == twice.Name {
			twice = f
		}
	}
	if twice.Reply == nil {
		t.Fatal("fakeresp has no answers-twice fault")
	}
	srv, err := fakeresp.Start(fakeresp.Lying("run-2", twice))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, Dialer: redisnode.BoundedDialer(nil, nil)})
	defer func() { _ = rc.Close() }()
	n := redisnode.New(rc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	for range 3 {
		if _, err := n.Acquire(ctx, node.AcquireArgs{Name: "lock:{k}", Token: "0123456789abcdef0123456789abcdef", TTL: time.Second, Seed: 1, Owner: "o", At: time.Unix(1, 0)}); err == nil {
			t.Error("acquire on a node answering :1 twice succeeded, want an error")
		}
		if id, err := n.Identify(ctx); err == nil && id.ID != "run-2" {
			t.Errorf("Identify read %q, a reply meant for another command", id.ID)
		}
	}
}
