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

// ProcessGone reports whether pid has exited: it no longer exists or is a
// zombie waiting to be reaped (dead, but not yet collected by its parent).
func ProcessGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name, which may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	return s[i+2] == 'Z' || s[i+2] == 'X'
}
