//go:build unix

package exporter

import "syscall"

// fileLimit is the process's soft RLIMIT_NOFILE (Go raises it to the hard
// limit at start), or MaxConns*2 when it cannot be read.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return MaxConns * 2
	}
	return r.Cur
}
