// Package proctest is the harness for tests that drive real leasetop
// processes: it builds the binary, starts child processes for a test
// (Start: output captured, exit code as a shell reports it, killed when the
// test ends), and provides the recorder, a child program for `leasetop run`
// that records on the database clock when it starts, every write it
// attempts through the fence check, and when it stops.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Build compiles the leasetop command into dir and returns the binary's path.
func Build(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "leasetop")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/leasetop/leasetop")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build leasetop: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// BuildTemp compiles the leasetop command into a new temporary folder named
// after pattern (as os.MkdirTemp), for a TestMain to build it once per test
// binary. cleanup removes the folder.
func BuildTemp(pattern string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if bin, err = Build(dir); err != nil {
		cleanup()
		return "", nil, err
	}
	return bin, cleanup, nil
}

// ProcessGone reports whether pid has exited: it no longer exists or is a
// zombie waiting to be reaped (dead, but not yet collected by its parent).
func ProcessGone(pid int) bool {
	p, ok := ReadProc(pid)
	return !ok || p.dead()
}

// GroupGone reports whether no live process (zombies aside) is left in
// process group pgid.
func GroupGone(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := ReadProc(pid); ok && p.PGRP == pgid && !p.dead() {
			return false
		}
	}
	return true
}

// Proc is what /proc/PID/stat says of a process.
type Proc struct {
	PID   int
	State byte // R, S, D, Z (zombie), ...
	PPID  int
	PGRP  int
	// Start is when it started, in clock ticks after boot: with the pid, it
	// names one process even after the pid is reused.
	Start uint64
}

func (p Proc) dead() bool { return p.State == 'Z' || p.State == 'X' }

// Alive reports whether the process p names still runs: the same pid and
// start time, not a zombie.
func (p Proc) Alive() bool {
	now, ok := ReadProc(p.PID)
	return ok && now.Start == p.Start && !now.dead()
}

// ReadProc reads a process's /proc/PID/stat.
func ReadProc(pid int) (Proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Proc{}, false
	}
	// The fields after the parenthesised command name (which may hold
	// spaces): state ppid pgrp session tty_nr tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, false
	}
	p := Proc{PID: pid, State: f[0][0]}
	var errs [3]error
	p.PPID, errs[0] = strconv.Atoi(f[1])
	p.PGRP, errs[1] = strconv.Atoi(f[2])
	p.Start, errs[2] = strconv.ParseUint(f[19], 10, 64)
	for _, err := range errs {
		if err != nil {
			return Proc{}, false
		}
	}
	return p, true
}
