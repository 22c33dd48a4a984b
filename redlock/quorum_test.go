package redlock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

// The count in an ErrQuorumUnreachable error matches the node
// errors joined in it, one per failed node, and the message is one line.
func TestQuorumErrorCountsAgree(t *testing.T) {
	t.Parallel()
	cl, c := start(t, 5, redlock.WithNodeTimeout(2*time.Second), redlock.WithRetry(retry.Never()))
	ctx := ctxFor(t)
	if _, err := c.TryAcquire(ctx, uniqueKey(t), time.Minute); err != nil { // first contact
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.Nodes()[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.TryAcquire(ctx, uniqueKey(t), time.Minute)
	if !errors.Is(err, redlock.ErrQuorumUnreachable) || errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrQuorumUnreachable only", err)
	}
	nodeErrs := countNodeErrors(err)
	if !strings.Contains(err.Error(), fmt.Sprintf("%d of 5 nodes failed", nodeErrs)) || nodeErrs != 3 {
		t.Fatalf("%d node errors joined in %q, want 3 and the same count in the text", nodeErrs, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the message spans lines: %q", err)
	}
}

func countNodeErrors(err error) int {
	var ne *redlock.NodeError
	if errors.As(err, &ne) && ne == err {
		return 1
	}
	n := 0
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			n += countNodeErrors(e)
		}
	case interface{ Unwrap() error }:
		n += countNodeErrors(u.Unwrap())
	}
	return n
}
