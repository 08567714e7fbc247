//go:build !unix

package exporter

// fileLimit: no RLIMIT_NOFILE here.
func fileLimit() uint64 { return MaxConns * 2 }
