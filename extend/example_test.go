package extend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/extend"
)

// A lease renewed by a function that gives up after two renewals: the
// watchdog declares it lost before its validity ends.
func Example() {
	l := newLease(time.Second)
	var mu sync.Mutex
	renewals := 0
	w, _ := extend.New(extend.Renew[*lease](func(_ context.Context, ls []*lease) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(ls))
		for i, x := range ls {
			if renewals == 2 {
				errs[i] = errors.New("no quorum")
				continue
			}
			renewals++
			x.renew(time.Now())
		}
		return errs
	}), extend.WithTick(10*time.Millisecond))

	type loss struct {
		err        error
		whileValid bool // declared before the validity ended
	}
	lost := make(chan loss, 1)
	stop := w.Keep(l, func(err error) { lost <- loss{err, time.Now().Before(l.ValidUntil())} })
	defer stop()
	got := <-lost
	fmt.Println(errors.Is(got.err, extend.ErrLost), got.whileValid)
	mu.Lock()
	fmt.Println("renewals:", renewals)
	mu.Unlock()
	// Output:
	// true true
	// renewals: 2
}
