package main

import (
	"context"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
	"github.com/quorumlock/quorumlock/retry"
)

type obs struct{ t0 time.Time }

func (o *obs) Observe(e redlock.Event) {
	fmt.Printf("%8s %v attempts=%d err=%v\n", time.Since(o.t0).Round(time.Millisecond), e.Kind, e.Attempts, e.Err)
}

func main() {
	b := retry.Constant(10, 200*time.Millisecond, 100*time.Millisecond).NewBackOff()
	for range 3 {
		fmt.Println(b.NextBackOff())
	}
	n := redlock.NewMemoryNode("a")
	c, _ := redlock.New([]redlock.Node{n})
	o := &obs{t0: time.Now()}
	c2, _ := redlock.New([]redlock.Node{n}, redlock.WithObserver(o))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "k", 8*time.Second)
	fmt.Println(err)
	_, err = c2.Acquire(ctx, "k", 8*time.Second)
	fmt.Println(err)
	_ = l
}
