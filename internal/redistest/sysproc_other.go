//go:build !linux

package redistest

import "syscall"

// sysProcAttr: Pdeathsig is Linux-only; elsewhere Close is the only cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
