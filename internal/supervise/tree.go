package supervise

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killTree sends SIGKILL to process group pgid (none if 0) and to every
// descendant of this process (the guardian, a child subreaper: orphans of
// the tree are its children). A process forked while the tree is read is
// caught by the next call: its parent dies, it becomes the guardian's
// child, and the guardian calls killTree again after each child it reaps.
func killTree(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for _, pid := range descendants(os.Getpid()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants lists the processes below root, read from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPID(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, children[pid]...)
	}
	return out
}

// parentPID reads a process's parent from /proc/PID/stat.
func parentPID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// After the parenthesised command name (which may hold spaces and
	// parentheses): state ppid ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
