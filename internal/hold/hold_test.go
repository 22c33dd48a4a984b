package hold_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/quorumlock/quorumlock/internal/hold"
)

var (
	errLost        = errors.New("lost")
	errNotAcquired = errors.New("not acquired")
	errInvalid     = errors.New("invalid")
)

// fakeLock ends with a cause, like the real kinds.
type fakeLock struct {
	ctx        context.Context
	end        context.CancelCauseFunc
	released   int
	releaseCtx context.Context
	releaseErr error
}

func newFake() *fakeLock {
	l := &fakeLock{}
	l.ctx, l.end = context.WithCancelCause(context.Background())
	return l
}

func (l *fakeLock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(l.ctx, func() { cancel(context.Cause(l.ctx)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}

func (l *fakeLock) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

func (l *fakeLock) Release(ctx context.Context) error {
	l.released++
	l.releaseCtx = ctx
	return l.releaseErr
}

func (l *fakeLock) hold(ctx context.Context, fn func(context.Context) error) (error, error, error) {
	return hold.Run(ctx, ctx, l, errLost, fn)
}

func kind() hold.Kind[*fakeLock] {
	return hold.Kind[*fakeLock]{
		NotAcquired: errNotAcquired,
		Invalid: func(format string, args ...any) error {
			return fmt.Errorf("%w: "+format, append([]any{errInvalid}, args...)...)
		},
		Hold: (*fakeLock).hold,
	}
}

func acquired(l *fakeLock) func(context.Context) (*fakeLock, error) {
	return func(context.Context) (*fakeLock, error) { return l, nil }
}

func TestReleaseOutlivesCallerCancellation(t *testing.T) {
	l := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	err := kind().Do(ctx, acquired(l), func(context.Context) error { cancel(); return nil })
	if err != nil || l.released != 1 || l.releaseCtx.Err() != nil {
		t.Fatalf("Do = %v, %d releases, release ctx err %v: want one release on a live context", err, l.released, l.releaseCtx.Err())
	}
}

func TestPanicReraisedAfterRelease(t *testing.T) {
	l := newFake()
	defer func() {
		if r := recover(); r != "boom" || l.released != 1 {
			t.Fatalf("recovered %v after %d releases, want the panic after one release", r, l.released)
		}
	}()
	_ = kind().Do(context.Background(), acquired(l), func(context.Context) error { panic("boom") })
}

func TestLossJoinedWithFnErrorAndReleaseErrorDropped(t *testing.T) {
	l := newFake()
	l.releaseErr = errors.New("quorum unreachable")
	fnErr := errors.New("work failed")
	err := kind().Do(context.Background(), acquired(l), func(ctx context.Context) error {
		l.end(fmt.Errorf("%w: expired", errLost))
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), errLost) {
			t.Errorf("fn's context ended with %v, want the loss", context.Cause(ctx))
		}
		return fnErr
	})
	if !errors.Is(err, fnErr) || !errors.Is(err, errLost) || errors.Is(err, l.releaseErr) {
		t.Fatalf("Do = %v, want fn's error and the loss, without the release's", err)
	}
}

func TestKeptLockJoinsReleaseError(t *testing.T) {
	l := newFake()
	l.releaseErr = errors.New("quorum unreachable")
	if err := kind().Do(context.Background(), acquired(l), func(context.Context) error { return nil }); !errors.Is(err, l.releaseErr) {
		t.Fatalf("Do = %v, want the release's error", err)
	}
}

func TestTryDoHeldByAnother(t *testing.T) {
	ran := false
	ok, err := kind().TryDo(context.Background(), func(context.Context) (*fakeLock, error) {
		return nil, fmt.Errorf("%w: held", errNotAcquired)
	}, func(context.Context) error { ran = true; return nil })
	if ok || err != nil || ran {
		t.Fatalf("TryDo = %v, %v (fn ran %v), want false, nil without running fn", ok, err, ran)
	}
	other := errors.New("unreachable")
	if ok, err := kind().TryDo(context.Background(), func(context.Context) (*fakeLock, error) { return nil, other }, func(context.Context) error { return nil }); ok || !errors.Is(err, other) {
		t.Fatalf("TryDo = %v, %v, want false and the acquisition's error", ok, err)
	}
}

func TestNilFnRefused(t *testing.T) {
	acquire := func(context.Context) (*fakeLock, error) { t.Fatal("acquired for a nil fn"); return nil, nil }
	if err := kind().Do(context.Background(), acquire, nil); !errors.Is(err, errInvalid) {
		t.Fatalf("Do(nil fn) = %v", err)
	}
	if ok, err := kind().TryDo(context.Background(), acquire, nil); ok || !errors.Is(err, errInvalid) {
		t.Fatalf("TryDo(nil fn) = %v, %v", ok, err)
	}
}

// A lock that ended before fn could run: fn does not run, TryDo says so
// (false) and both report the loss.
func TestLockEndedBeforeFnDoesNotRunIt(t *testing.T) {
	l := newFake()
	l.end(fmt.Errorf("%w: expired", errLost))
	ran := false
	fn := func(context.Context) error { ran = true; return nil }
	if err := kind().Do(context.Background(), acquired(l), fn); ran || !errors.Is(err, errLost) {
		t.Fatalf("Do on an ended lock = %v (fn ran %v), want the loss without running fn", err, ran)
	}
	if ok, err := kind().TryDo(context.Background(), acquired(l), fn); ok || ran || !errors.Is(err, errLost) {
		t.Fatalf("TryDo on an ended lock = %v, %v (fn ran %v), want false and the loss", ok, err, ran)
	}
}
