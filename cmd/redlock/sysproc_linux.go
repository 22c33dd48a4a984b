package main

import "syscall"

// childSysProcAttr makes the kernel send CMD SIGTERM if redlock dies (even
// by SIGKILL): without redlock nobody extends the lock, so CMD must not keep
// running unprotected.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
