//go:build !linux

package redistest

import "syscall"

// sysProcAttr: only Linux has Pdeathsig; elsewhere the cleanups stop the server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
