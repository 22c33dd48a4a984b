//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// subreaper: without one, orphans of CMD's tree go to init; only CMD's
// process group stays reachable.
const subreaper = false

func becomeSubreaper() error { return nil }

func selfExe() (string, error) { return os.Executable() }

// isTTY reports whether fd is a terminal: it has terminal attributes.
func isTTY(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TIOCGETA)
	return err == nil
}

func descendants(int) []int { return nil }
