//go:build !linux

package main

import "syscall"

func childSysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
