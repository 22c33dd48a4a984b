package redistest

import "syscall"

// sysProcAttr makes the kernel SIGKILL a node when the test binary dies, so
// a crashed or killed test never leaves servers behind. (Pdeathsig fires when
// the creating OS thread exits; the Go runtime keeps threads alive, so in
// practice that is process death.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
