package device

import (
	"fmt"
	"strconv"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// The lease's time to live a device takes: DefaultTTL when none is given,
// between MinTTL and MaxTTL.
const (
	DefaultTTL = 4 * time.Second
	MinTTL     = time.Second
	MaxTTL     = time.Minute
)

// HolderLabel is the holder label a device process shows on its leases. The
// demo computes it from the pid of a process it started, to know which leases
// a process it killed held.
func HolderLabel(device string, pid int) string { return device + " pid " + strconv.Itoa(pid) }

// inputErrorf is an ErrInvalid naming the bad setting.
func inputErrorf(field, format string, args ...any) error {
	return &data.InputError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
