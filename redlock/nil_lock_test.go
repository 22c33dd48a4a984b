package redlock_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// nilLockArg is the argument a nil *Lock's method gets for a parameter of
// type t; a new parameter type fails the test until it is added here.
func nilLockArg(t *testing.T, method string, typ reflect.Type) reflect.Value {
	t.Helper()
	switch typ {
	case reflect.TypeFor[context.Context]():
		return reflect.ValueOf(context.Background())
	case reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(time.Second)
	case reflect.TypeFor[func(context.Context) error]():
		return reflect.ValueOf(func(context.Context) error {
			t.Errorf("%s ran fn on a nil *Lock", method)
			return nil
		})
	}
	t.Fatalf("%s: no argument for a %v; add one to nilLockArg", method, typ)
	return reflect.Value{}
}

// Every exported method of a nil *Lock (what a failed Acquire returns)
// returns an error wrapping ErrLockLost or a zero value, never panics: a
// Release deferred before Acquire's error is checked is harmless. The
// methods are found by reflection, so a new one without the guard fails.
func TestNilLockMethodsDoNotPanic(t *testing.T) {
	t.Parallel()
	var l *redlock.Lock
	v := reflect.ValueOf(l)
	typ := v.Type()
	if typ.NumMethod() < 15 {
		t.Fatalf("found %d methods of *Lock; want every exported one", typ.NumMethod())
	}
	testOnly := map[string]bool{"Token": true, "Unanswered": true} // export_test.go's
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		if testOnly[m.Name] {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			var args []reflect.Value
			for j := 1; j < m.Type.NumIn(); j++ { // 0 is the receiver
				args = append(args, nilLockArg(t, m.Name, m.Type.In(j)))
			}
			var out []reflect.Value
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s on a nil *Lock panicked: %v", m.Name, p)
					}
				}()
				out = v.Method(i).Call(args)
			}()
			for k, o := range out {
				switch x := o.Interface().(type) {
				case error:
					if !errors.Is(x, redlock.ErrLockLost) && !(m.Name == "Hold" && k != 1) {
						t.Errorf("%s result %d = %v; want an error wrapping ErrLockLost", m.Name, k, x)
					}
				case <-chan struct{}:
					select {
					case <-x:
					default:
						t.Errorf("%s: channel not closed", m.Name)
					}
				case context.Context:
					if !errors.Is(context.Cause(x), redlock.ErrLockLost) {
						t.Errorf("%s: context's cause %v; want ErrLockLost", m.Name, context.Cause(x))
					}
				case context.CancelFunc:
					x()
				case func():
					x()
				case nil:
				default:
					if !o.IsZero() {
						t.Errorf("%s result %d = %v; want the zero value", m.Name, k, x)
					}
				}
			}
		})
	}
}
