package retry_test

import (
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/retry"
)

// A policy is shared; every acquisition draws its own schedule from it.
func ExampleConstant() {
	p := retry.Constant(3, 100*time.Millisecond, 0)
	run := p.Delays()
	for d, ok := run.Next(); ok; d, ok = run.Next() {
		fmt.Println("retry after", d)
	}
	fmt.Println(p)
	// Output:
	// retry after 100ms
	// retry after 100ms
	// retry after 100ms
	// constant(count=3, delay=100ms, jitter=0s)
}
