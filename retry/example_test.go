package retry_test

import (
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/quorumlock/quorumlock/retry"
)

// A policy is shared; every acquisition draws its own schedule from it.
func ExampleConstant() {
	p := retry.Constant(3, 100*time.Millisecond, 0)
	b := p.NewBackOff()
	for d := b.NextBackOff(); d != backoff.Stop; d = b.NextBackOff() {
		fmt.Println("retry after", d)
	}
	fmt.Println(p)
	// Output:
	// retry after 100ms
	// retry after 100ms
	// retry after 100ms
	// constant(count=3, delay=100ms, jitter=0s)
}
