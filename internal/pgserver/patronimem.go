package pgserver

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is what a cluster's processes use, read from /proc.
type Memory struct {
	// Processes is how many processes were counted: etcd, HAProxy, each
	// Patroni and each postmaster, and all their descendants (backends,
	// WAL senders and receivers, Patroni's workers).
	Processes int
	// RSSKiB sums their resident set sizes: shared memory (PostgreSQL's
	// shared buffers) counts once per process that touched it.
	RSSKiB int64
	// PSSKiB sums their proportional set sizes: shared pages divided among
	// the processes sharing them, the nearer measure of what the cluster
	// costs the machine.
	PSSKiB int64
}

// Memory measures the cluster's processes now.
func (c *Cluster) Memory() Memory {
	roots := map[int]bool{}
	for _, d := range []*daemon{c.etcd.daemonOrNil(), c.haproxy.daemonOrNil()} {
		if d != nil && !d.exited() {
			roots[d.pid()] = true
		}
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		if n.patroni != nil && !n.patroni.exited() {
			roots[n.patroni.pid()] = true
		}
		n.mu.Unlock()
		if pid := n.PostmasterPID(); pid > 0 {
			roots[pid] = true
		}
	}
	children := map[int][]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if ppid := procField(p, "PPid:"); ppid > 0 {
			children[int(ppid)] = append(children[int(ppid)], pid)
		}
	}
	var m Memory
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		dir := "/proc/" + strconv.Itoa(pid)
		m.Processes++
		m.RSSKiB += procField(dir, "VmRSS:")
		m.PSSKiB += procFieldIn(filepath.Join(dir, "smaps_rollup"), "Pss:")
		for _, ch := range children[pid] {
			walk(ch)
		}
	}
	for pid := range roots {
		walk(pid)
	}
	return m
}

func (e *etcd) daemonOrNil() *daemon {
	if e == nil {
		return nil
	}
	return e.daemon
}

func (h *haproxy) daemonOrNil() *daemon {
	if h == nil {
		return nil
	}
	return h.daemon
}

// procField reads a "Name: value" line of /proc/PID/status (dir is
// /proc/PID): the number, in kB for memory fields.
func procField(dir, name string) int64 {
	return procFieldIn(filepath.Join(dir, "status"), name)
}

// procFieldIn reads the first number after name at the start of a line of
// file, or 0.
func procFieldIn(file, name string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				v, _ := strconv.ParseInt(fields[0], 10, 64)
				return v
			}
		}
	}
	return 0
}
