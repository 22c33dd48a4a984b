package main

import (
	"os"
	"syscall"
)

// child is CMD's process, signalled as a whole process group when it has
// one of its own.
type child struct {
	proc  *os.Process
	group bool
}

// ownGroup reports whether CMD should get a process group of its own: yes,
// unless stdin is a terminal (an interactive CMD in a background group
// could not read the terminal; Ctrl-C reaches it directly there anyway).
func ownGroup() bool {
	fi, err := os.Stdin.Stat()
	return err != nil || fi.Mode()&os.ModeCharDevice == 0
}

func (c child) signal(s os.Signal) {
	ss, ok := s.(syscall.Signal)
	if c.group && ok {
		if err := syscall.Kill(-c.proc.Pid, ss); err == nil {
			return
		}
	}
	_ = c.proc.Signal(s)
}
