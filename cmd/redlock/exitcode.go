package main

import (
	"errors"
	"fmt"
)

// Exit codes of redlock itself. The exit status of a command run by exec is
// passed through unchanged, so a command that exits 1-4 on its own can be
// confused with these; -E moves the conflict code out of the way. doc.go
// documents them for users.
const (
	exitOK          = 0
	exitConflict    = 1 // -n found the lock held, or -w timed out (override with -E)
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // too few nodes answered for a quorum
	exitLockLost    = 4 // the lock was lost while the command ran
	exitCannotExec  = 126
	exitNotFound    = 127
	exitSignalBase  = 128 // + signal number: the command (or redlock) died by a signal
)

// exitError carries an exit code and the one line to print on stderr (empty:
// print nothing, e.g. when passing a child's status through).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func usageErr(cmd, format string, args ...any) error {
	return exitf(exitUsage, "redlock %s: %s (see 'redlock help %s')", cmd, fmt.Sprintf(format, args...), cmd)
}

// codeOf maps an error to its exit code; a plain error is a failure (1).
func codeOf(err error) (int, string) {
	if err == nil {
		return exitOK, ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.msg
	}
	return 1, "redlock: " + err.Error()
}
