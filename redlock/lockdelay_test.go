package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/node"
	"github.com/quorumlock/quorumlock/node/memnode"
	"github.com/quorumlock/quorumlock/node/redisnode"
	"github.com/quorumlock/quorumlock/redlock"
)

// delayedHolderEnv makes the test binary a holder with a lock-delay that
// prints its lock and waits to be killed (TestHelperDelayedHolder).
const delayedHolderEnv = "QUORUMLOCK_TEST_DELAYED_HOLDER"

const (
	delayedTTL = time.Second
	lockDelay  = 10 * time.Second
)

// A holder with a lock-delay is killed (SIGKILL: no release). Once its
// lock's validity is over by the nodes' clock, the nodes still keep the key
// for the delay: an attempt then is refused. A waiter gets the key after
// the delay, with a TookOver report naming the killed holder.
func TestLockDelayAfterKilledHolder(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperDelayedHolder$")
	cmd.Env = append(os.Environ(), delayedHolderEnv+"="+strings.Join(cl.Addrs(), ",")+"|"+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var holder string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if h, ok := strings.CutPrefix(sc.Text(), "HOLDING "); ok {
			holder = h
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if holder == "" {
		t.Fatal("the holder process never reported its lock")
	}
	// The holder's validity began before it printed, so it is over by
	// this node time plus the TTL; the nodes keep the key the delay longer.
	rc := cl.Clients()[0]
	printed, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	name := "lock:{" + key + "}"
	for _, c := range cl.Clients() {
		if pttl := c.PTTL(ctx, name).Val(); pttl <= delayedTTL {
			t.Fatalf("the killed holder's key lives %s on %s: want its TTL %s and the delay", pttl, c.Options().Addr, delayedTTL)
		}
	}
	for now := printed; now.Sub(printed) <= delayedTTL; {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if now, err = rc.Time(ctx).Result(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, nodesOf(cl), patient)
	if _, err := c.TryAcquire(ctx, key, 30*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("attempt after the killed holder's validity ended, within its delay: %v, want ErrNotAcquired", err)
	}
	l, err := c.Acquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); !ok || prev.Holder != holder {
		t.Fatalf("TookOver = %+v, %v; want the killed holder %s", prev, ok, holder)
	}
}

// A clean release ends the lock at once, delay or not: the next attempt
// acquires, and takes over from nobody.
func TestLockDelayNotAfterRelease(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, 3)
	ctx, key := ctxFor(t), uniqueKey(t)
	holder := newClient(t, nodesOf(cl), redlock.WithLockDelay(time.Hour))
	l, err := holder.TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = holder.Close() // Release returns at a majority: let every node's release land
	l, err = newClient(t, nodesOf(cl)).TryAcquire(ctx, key, 30*time.Second)
	if err != nil {
		t.Fatalf("attempt after a clean release: %v", err)
	}
	defer l.Release(ctx)
	if prev, ok := l.TookOver(); ok {
		t.Fatalf("after a release, TookOver = %+v", prev)
	}
}

func TestNegativeLockDelayRefused(t *testing.T) {
	t.Parallel()
	_, err := redlock.New([]node.Node{memnode.New("a")}, redlock.WithLockDelay(-time.Second))
	if !errors.Is(err, redlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "lock delay -1s is negative") {
		t.Fatalf("WithLockDelay(-1s): %v, want ErrInvalidArgument saying the lock delay -1s is negative", err)
	}
}

// TestHelperDelayedHolder is the holder process of
// TestLockDelayAfterKilledHolder.
func TestHelperDelayedHolder(t *testing.T) {
	spec := os.Getenv(delayedHolderEnv)
	if spec == "" {
		t.Skip("only as the holder process of TestLockDelayAfterKilledHolder")
	}
	addrs, key, _ := strings.Cut(spec, "|")
	var nodes []node.Node
	for _, a := range strings.Split(addrs, ",") {
		nodes = append(nodes, redisnode.New(redisClient(a)))
	}
	c, err := redlock.New(nodes, redlock.WithLockDelay(lockDelay))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.TryAcquire(context.Background(), key, delayedTTL)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("HOLDING " + node.ReleaseID(l.Token()))
	time.Sleep(time.Hour) // until killed
}
