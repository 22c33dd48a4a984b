package guard

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A panic becomes a *PanicError with its value and stack, which unwraps to
// the value when that is an error; Log writes both.
func TestCallTurnsPanicIntoError(t *testing.T) {
	v, err := Call(func() (int, error) { panic(io.ErrUnexpectedEOF) })
	var pe *PanicError
	if v != 0 || !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Contains(pe.Stack, []byte("guard_test.go")) {
		t.Fatalf("Call = %d, %v; want a *PanicError carrying the value and its stack", v, err)
	}
	if v, err := Call(func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("Call = %d, %v; want 7, nil", v, err)
	}
	var out bytes.Buffer
	Log(slog.New(slog.NewTextHandler(&out, nil)), "test", err)
	if !strings.Contains(out.String(), "unexpected EOF") || !strings.Contains(out.String(), "guard_test.go") {
		t.Fatalf("log lacks the value or the stack: %s", out.String())
	}
}
