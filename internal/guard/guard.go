// Package guard turns a panic in a goroutine the library starts into an
// error. A node is input: a client library that cannot decode what a node
// sent (a length of a petabyte, say) may panic in the goroutine that asked,
// and an unrecovered panic there ends the whole process although the other
// nodes are fine. Every launch point runs its work through Call or Go, so
// the failure stays with the node that caused it.
package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a recovered panic: its value and the stack of the goroutine
// where it happened. It unwraps to the value when that is an error.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call runs f and returns its results, or a *PanicError if it panicked.
func Call[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return f()
}

// Run is Call for work without a result.
func Run(f func()) error {
	_, err := Call(func() (struct{}, error) { f(); return struct{}{}, nil })
	return err
}

// Go runs f in a new goroutine; a panic in it is logged (see Log) instead
// of ending the process.
func Go(logger *slog.Logger, what string, f func()) {
	go func() { Log(logger, what, Run(f)) }()
}

// Log writes err to logger at error level, with the panic's value and stack
// when err holds a *PanicError; it does nothing for other errors. logger may
// be nil.
func Log(logger *slog.Logger, what string, err error, attrs ...any) {
	var pe *PanicError
	if logger == nil || !errors.As(err, &pe) {
		return
	}
	attrs = append(attrs, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	logger.ErrorContext(context.Background(), what+": panic recovered", attrs...)
}
