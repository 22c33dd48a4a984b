package main

import "syscall"

// childSysProcAttr puts CMD in a process group of its own when group is
// set, so that a lost lock stops the whole tree (a shell and what it
// started), as consul lock does. With Pdeathsig the kernel sends CMD SIGTERM
// if redlock dies (even by SIGKILL): without redlock nobody extends the lock,
// so CMD must not keep running unprotected.
func childSysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGTERM}
}
