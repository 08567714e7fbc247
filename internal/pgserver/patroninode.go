package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/tcpproxy"
)

// Node is one PostgreSQL server of a Cluster, run by its own Patroni.
type Node struct {
	// Name is the node's Patroni member name (node0, node1, ...).
	Name string
	// PGPort is PostgreSQL's port on 127.0.0.1.
	PGPort int
	// APIPort is Patroni's REST API port on 127.0.0.1.
	APIPort int

	c   *Cluster
	dir string // the node's folder: data/, the socket, its configuration
	// repl is the node's connect_address, the address Patroni gives the
	// other nodes to stream from, rewind from and take base backups
	// from: a proxy in this process to PGPort, which can blackhole it.
	// Clients (the DSN, HAProxy) use PGPort directly.
	repl *tcpproxy.Proxy
	// dcs is the node's way to etcd: a proxy in this process (Patroni
	// with use_proxies, so that it does not find etcd's own address),
	// which can blackhole it.
	dcs *tcpproxy.Proxy

	mu      sync.Mutex
	patroni *daemon
}

// newNode picks the node's ports and writes its folder and configuration.
func (c *Cluster) newNode(i int) (*Node, error) {
	n := &Node{Name: "node" + strconv.Itoa(i), c: c, dir: filepath.Join(c.dir, "node"+strconv.Itoa(i))}
	var err error
	if n.PGPort, err = freePort(); err != nil {
		return nil, err
	}
	if n.APIPort, err = freePort(); err != nil {
		return nil, err
	}
	if n.repl, err = tcpproxy.Start("127.0.0.1:" + strconv.Itoa(n.PGPort)); err != nil {
		return nil, fmt.Errorf("%s: replication proxy: %w", n.Name, err)
	}
	if n.dcs, err = tcpproxy.Start("127.0.0.1:" + strconv.Itoa(c.etcd.clientPort)); err != nil {
		n.repl.Close()
		return nil, fmt.Errorf("%s: etcd proxy: %w", n.Name, err)
	}
	if err := os.Mkdir(n.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", n.dir, err)
	}
	if err := c.chown(n.dir); err != nil {
		return nil, err
	}
	cfg, err := c.patroniConfig(n)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(n.configPath(), cfg, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", n.configPath(), err)
	}
	if err := c.chown(n.configPath()); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Node) configPath() string { return filepath.Join(n.dir, "patroni.yml") }
func (n *Node) dataDir() string    { return filepath.Join(n.dir, "data") }
func (n *Node) logPath() string    { return filepath.Join(n.c.dir, n.Name+".log") }

// start starts the node's Patroni (which starts PostgreSQL: initdb on the
// first node, a base backup of the leader on the others).
func (n *Node) start() error {
	bin, err := exec.LookPath("patroni")
	if err != nil {
		return ErrNoPatroni
	}
	d, err := startDaemon(n.c.cred, n.dir, n.logPath(), bin, n.configPath())
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.patroni = d
	n.mu.Unlock()
	return nil
}

// Restart starts the node's Patroni again after Stop; it rejoins the
// cluster (as a replica when another node holds the leader key: Patroni
// rewinds it first when its timeline diverged). It does not wait.
func (n *Node) Restart() error { return n.start() }

// stop stops Patroni (SIGTERM: it stops PostgreSQL with a fast shutdown
// and gives up the leader key), waits up to 30 s, then kills its group and
// any postmaster it left.
func (n *Node) stop() {
	n.mu.Lock()
	d := n.patroni
	n.patroni = nil
	n.mu.Unlock()
	d.stop(syscall.SIGTERM, 30*time.Second)
	if pid := n.PostmasterPID(); pid > 0 {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// BlackholeReplication stops every byte between the node and the nodes
// that stream from it (or rewind from it), without closing anything, the
// way a network partition between them looks: its replicas fall behind
// while clients still reach it. ResumeReplication delivers what was held.
func (n *Node) BlackholeReplication() { n.repl.Blackhole() }

// ResumeReplication undoes BlackholeReplication.
func (n *Node) ResumeReplication() { n.repl.Resume() }

// PartitionFromEtcd stops every byte between the node's Patroni and etcd,
// the way a network partition looks: the node's PostgreSQL keeps serving
// its clients and replicas while Patroni cannot renew (or see) the leader
// key. HealEtcd ends it.
func (n *Node) PartitionFromEtcd() { n.dcs.Blackhole() }

// HealEtcd undoes PartitionFromEtcd.
func (n *Node) HealEtcd() { n.dcs.Resume() }

// closeProxies closes the node's proxies.
func (n *Node) closeProxies() {
	n.repl.Close()
	n.dcs.Close()
}

// Stop stops the node as an operator would (Patroni and its PostgreSQL,
// cleanly), and waits for it.
func (n *Node) Stop() { n.stop() }

// PostmasterPID returns the pid in the node's postmaster.pid when that
// process is this node's running postmaster, else 0.
func (n *Node) PostmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	// The file outlives a killed postmaster, and its pid may be another
	// process's by now: only this node's postmaster counts.
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !strings.Contains(string(cmdline), n.dataDir()) {
		return 0
	}
	return pid
}

// KillPostmaster kills the node's postmaster with SIGKILL (its backends
// then exit as well: PostgreSQL's postmaster-death handling) and returns
// its pid. Patroni, which keeps running, notices within a loop.
func (n *Node) KillPostmaster() (int, error) {
	pid := n.PostmasterPID()
	if pid == 0 {
		return 0, fmt.Errorf("%s: no running postmaster", n.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("%s: kill postmaster %d: %w", n.Name, pid, err)
	}
	return pid, nil
}

// apiURL returns the URL of path on the node's REST API.
func (n *Node) apiURL(path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(n.APIPort) + path
}

// Is reports whether the node's REST API answers GET path (a health check:
// "/primary", "/replica", "/sync", "/health") with 200.
func (n *Node) Is(ctx context.Context, path string) bool {
	code, err := getStatus(ctx, n.apiURL(path), nil)
	return err == nil && code == 200
}

// waitStatus waits until GET path answers 200, Patroni exits, or timeout.
func (n *Node) waitStatus(ctx context.Context, timeout time.Duration, path string) error {
	n.mu.Lock()
	d := n.patroni
	n.mu.Unlock()
	return poll(ctx, timeout, d, n.Name+": GET "+path+" to answer 200", func(ctx context.Context) error {
		code, err := getStatus(ctx, n.apiURL(path), nil)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("status %d", code)
		}
		return nil
	})
}

// Status is what a node's GET /patroni says of it.
type Status struct {
	State    string `json:"state"` // running, starting, stopped, ...
	Role     string `json:"role"`  // master (Patroni 3.0's word for primary), replica
	Timeline int    `json:"timeline"`
}

// Status returns the node's GET /patroni.
func (n *Node) Status(ctx context.Context) (Status, error) {
	var s Status
	err := getJSON(ctx, n.apiURL("/patroni"), &s)
	return s, err
}

// WaitRejoined waits until the node runs as a replica of leader again: its
// GET /replica answers 200, it is on leader's timeline (after a failover
// Patroni may first start it on its old one, then rewind it), and its
// PostgreSQL accepts connections. It returns how long that took.
func (n *Node) WaitRejoined(ctx context.Context, timeout time.Duration, leader *Node) (time.Duration, error) {
	t0 := time.Now()
	n.mu.Lock()
	d := n.patroni
	n.mu.Unlock()
	err := poll(ctx, timeout, d, n.Name+": to rejoin as a replica of "+leader.Name, func(ctx context.Context) error {
		if !n.Is(ctx, "/replica") {
			return errors.New("GET /replica does not answer 200")
		}
		want, err := leader.Status(ctx)
		if err != nil {
			return err
		}
		got, err := n.Status(ctx)
		if err != nil {
			return err
		}
		if got.Timeline != want.Timeline || got.State != "running" {
			return fmt.Errorf("%s on timeline %d, the leader on %d", got.State, got.Timeline, want.Timeline)
		}
		return acceptsConnections(ctx, n.c.URL(n, "postgres"))
	})
	return time.Since(t0), err
}
