// Package proctest is the harness for tests that drive real leasetop
// processes: it builds the binary, and it provides the recorder, a child
// program for `leasetop run` that records on the database clock when it
// starts, every write it attempts through the fence check, and when it stops.
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
	state, _, ok := procStat(pid)
	return !ok || state == 'Z' || state == 'X'
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
		state, pgrp, ok := procStat(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return false
		}
	}
	return true
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The fields after the parenthesised command name (which may hold
	// spaces): state ppid pgrp ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	if err != nil || len(f[0]) != 1 {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
