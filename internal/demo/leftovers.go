package demo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// A demo killed with SIGKILL cannot remove its embedded server's folder
// (its server stops by itself: it gets SIGINT when its parent dies). So
// each demo leaves a file in that folder naming itself, and the next one
// removes the folders whose demo is gone. A folder is removed only when
// it proves to be a dead demo's: its name has pgserver.DirPrefix, it is a
// real folder (not a link), it holds an owner file (a regular file, written
// by the same user) that parses, the process it names is gone (no such
// pid, another start time under that pid, or another boot), and no
// postmaster runs in it. Anything else (a live demo's folder, a test's
// server, a folder another user made) is left alone.

// ownerFile is the file in an embedded server's folder that names the demo
// process owning it.
const ownerFile = "leasetop-demo.owner"

// owner identifies a process across pid reuse: its pid, its start time
// (clock ticks after boot, /proc/PID/stat field 22) and the boot it runs
// in.
type owner struct {
	pid   int
	start uint64
	boot  string
}

// self returns this process as an owner.
func self() (owner, error) {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return owner{}, err
	}
	boot, err := bootID()
	if err != nil {
		return owner{}, err
	}
	return owner{pid: pid, start: start, boot: boot}, nil
}

// claim writes the owner file of this process into dir: pgserver's Claim.
func claim(dir string) error {
	o, err := self()
	if err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	text := fmt.Sprintf("%d %d %s\n", o.pid, o.start, o.boot)
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(text), 0o600); err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	return nil
}

// readOwner reads dir's owner file; it must be a regular file that this
// process's user wrote.
func readOwner(dir string) (owner, error) {
	path := filepath.Join(dir, ownerFile)
	fi, err := os.Lstat(path)
	if err != nil {
		return owner{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || int(st.Uid) != os.Geteuid() {
		return owner{}, fmt.Errorf("%s: not a regular file of this user", path)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return owner{}, err
	}
	f := strings.Fields(string(text))
	if len(f) != 3 {
		return owner{}, fmt.Errorf("%s: want pid, start time and boot id", path)
	}
	var o owner
	o.pid, err = strconv.Atoi(f[0])
	if err != nil || o.pid <= 0 {
		return owner{}, fmt.Errorf("%s: bad pid %q", path, f[0])
	}
	if o.start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return owner{}, fmt.Errorf("%s: bad start time %q", path, f[1])
	}
	o.boot = f[2]
	return o, nil
}

// gone reports whether the owner process has ended. An error reading the
// current boot or a live process's start time counts as "not proven gone".
func (o owner) gone() bool {
	boot, err := bootID()
	if err != nil {
		return false
	}
	if boot != o.boot {
		return true // another boot: every process of that one has ended
	}
	start, err := startTime(o.pid)
	if errors.Is(err, os.ErrNotExist) {
		return true // no such process
	}
	return err == nil && start != o.start // the pid now belongs to another process
}

// RemoveLeftovers removes, from tmp (os.TempDir() for a demo), the folders
// of embedded servers whose demo was killed, and returns their paths. It
// never removes a folder it cannot prove is a dead demo's (see above).
func RemoveLeftovers(tmp string) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmp, pgserver.DirPrefix+"*"))
	var removed []string
	for _, dir := range dirs {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue // a link or a file: not a server's folder
		}
		o, err := readOwner(dir)
		if err != nil || !o.gone() || postmasterRuns(dir) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// postmasterRuns reports whether the server in dir may still run: its
// postmaster.pid names a live process. Its server stops by itself once its
// demo is gone, and removes the file.
func postmasterRuns(dir string) bool {
	text, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // unreadable: not proven stopped
	}
	line, _, _ := strings.Cut(string(text), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return false // a torn file: no postmaster wrote it completely
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// startTime returns process pid's start time in clock ticks after boot
// (field 22 of /proc/PID/stat); os.ErrNotExist when there is no such
// process.
func startTime(pid int) (uint64, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses: the fields after it follow its last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	const startField = 22 - 3 // fields 3.. follow the command name
	if len(f) <= startField {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[startField], 10, 64)
}

// bootID is the kernel's id of the current boot.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
