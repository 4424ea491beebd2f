package redistest

import "syscall"

// sysProcAttr has the kernel kill redis-server when the thread that started it
// ends; spawn keeps that thread alive until the process exits, so this fires
// only when the test binary dies without running its cleanups.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
