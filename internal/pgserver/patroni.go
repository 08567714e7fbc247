package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoPatroni is returned by StartCluster when patroni or etcd is not
// installed. Its message says how to install them.
var ErrNoPatroni = errors.New("patroni and etcd are needed for the Patroni cluster: " +
	"install them (Debian/Ubuntu: apt-get install -y --no-install-recommends patroni python3-etcd etcd-server haproxy)")

// ClusterOptions configure StartCluster. The zero value is two nodes,
// asynchronous, without HAProxy.
type ClusterOptions struct {
	// Nodes is how many PostgreSQL nodes run under Patroni: 2 or 3.
	// Default 2.
	Nodes int
	// Replication is the cluster's mode. Default Asynchronous.
	Replication Replication
	// MaximumLagOnFailover is Patroni's maximum_lag_on_failover in bytes:
	// a replica further behind is not promoted. Default 1 MiB (Patroni's).
	MaximumLagOnFailover int64
	// HAProxy puts an HAProxy in front of the nodes that sends connections
	// to the one whose Patroni answers GET /primary with 200.
	HAProxy bool
	// Settings are extra PostgreSQL parameters of every node.
	Settings map[string]string
	// Timeout bounds each wait of the start-up (etcd healthy, the leader
	// elected and bootstrapped, each replica streaming). Default 120 s.
	Timeout time.Duration
}

// Cluster is a running Patroni cluster on loopback: one etcd, the nodes
// (PostgreSQL under Patroni, each with its REST API) and optionally
// HAProxy, all run as the postgres user when this process is root. Close
// stops all of it and removes its folder; it is also stopped when this
// process gets SIGINT or SIGTERM, and (Pdeathsig) when it dies.
type Cluster struct {
	opts         ClusterOptions
	dir          string
	bin          string
	cred         *syscall.Credential
	scope        string
	password     string // the superuser's
	replPassword string
	etcd         *etcd
	nodes        []*Node
	haproxy      *haproxy
	startedIn    time.Duration

	closeOnce sync.Once
	unwatch   func() // stops the signal watch
}

// StartCluster starts etcd, then the first node (which bootstraps the
// cluster and becomes its leader), then the others as replicas of it, then
// HAProxy, and waits for each: etcd's GET /health, the leader's GET
// /primary, each replica's GET /replica (and, in a synchronous mode, one
// GET /sync), HAProxy's route to the primary. On an error everything
// started is stopped.
func StartCluster(ctx context.Context, opts ClusterOptions) (_ *Cluster, err error) {
	t0 := time.Now()
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.Nodes < 2 || opts.Nodes > 3 {
		return nil, fmt.Errorf("a Patroni cluster of %d nodes: want 2 or 3", opts.Nodes)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 120 * time.Second
	}
	if _, err := exec.LookPath("patroni"); err != nil {
		return nil, ErrNoPatroni
	}
	if opts.HAProxy {
		if _, err := haproxyBinary(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{opts: opts, scope: "leasetop-" + randomHex(4), password: randomHex(16), replPassword: randomHex(16)}
	if c.bin, err = FindBinaries(); err != nil {
		return nil, err
	}
	if c.cred, err = serverCredential(); err != nil {
		return nil, err
	}
	if c.dir, err = os.MkdirTemp("", DirPrefix+"patroni-"); err != nil {
		return nil, fmt.Errorf("create temporary folder: %w", err)
	}
	c.watchSignals()
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.chown(c.dir); err != nil {
		return nil, err
	}
	if c.etcd, err = startEtcd(ctx, c.cred, c.dir, opts.Timeout); err != nil {
		return nil, err
	}
	// The first node alone, so that it bootstraps the cluster. Each node's
	// ports are picked right before it starts: picked before the first
	// node's bootstrap, a replica's port stayed free for tens of seconds,
	// and a connection of another process took it (Patroni's REST API then
	// failed to bind, in CI).
	first, err := c.newNode(0)
	if err != nil {
		return nil, err
	}
	c.nodes = append(c.nodes, first)
	if err := first.start(); err != nil {
		return nil, err
	}
	if err := first.waitStatus(ctx, opts.Timeout, "/primary"); err != nil {
		return nil, err
	}
	for i := 1; i < opts.Nodes; i++ {
		n, err := c.newNode(i)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
		if err := n.start(); err != nil {
			return nil, err
		}
	}
	for _, n := range c.nodes[1:] {
		if err := n.waitStatus(ctx, opts.Timeout, "/replica"); err != nil {
			return nil, err
		}
	}
	if opts.Replication != Asynchronous {
		if _, err := c.WaitSync(ctx, nil); err != nil {
			return nil, err
		}
	}
	if opts.HAProxy {
		if c.haproxy, err = startHAProxy(ctx, c.cred, c.dir, c.nodes, c.nodes[0].Name, c.URL(c.nodes[0], "postgres"), opts.Timeout); err != nil {
			return nil, err
		}
	}
	c.startedIn = time.Since(t0)
	return c, nil
}

// chown gives path to the server user (when root).
func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("chown %s to postgres: %w", path, err)
	}
	return nil
}

// watchSignals stops the cluster when this process gets SIGINT or SIGTERM,
// then lets the signal take its course.
func (c *Cluster) watchSignals() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			c.close()
			signal.Reset(sig)
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		case <-done:
		}
	})
	var once sync.Once
	c.unwatch = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			wg.Wait()
		})
	}
}

// Nodes returns the cluster's nodes, in start order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// StartedIn returns how long StartCluster took.
func (c *Cluster) StartedIn() time.Duration { return c.startedIn }

// Dir returns the cluster's temporary folder (the nodes' data, the logs).
func (c *Cluster) Dir() string { return c.dir }

// URL returns a connection URL for database db on node n, directly, as the
// superuser.
func (c *Cluster) URL(n *Node, db string) string {
	return c.urlFor([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(n.PGPort))}, db, "")
}

// DSN returns the multi-host URL applications use for database db: every
// node, with target_session_attrs=read-write, so that a connection reaches
// whichever node accepts writes.
func (c *Cluster) DSN(db string) string {
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.PGPort))
	}
	return c.urlFor(hosts, db, "read-write")
}

// HAProxyURL returns the URL of database db through HAProxy, or "" when the
// cluster has none.
func (c *Cluster) HAProxyURL(db string) string {
	if c.haproxy == nil {
		return ""
	}
	return c.urlFor([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(c.haproxy.port))}, db, "")
}

func (c *Cluster) urlFor(hosts []string, db, attrs string) string {
	q := url.Values{"sslmode": {"disable"}, "connect_timeout": {"5"}}
	if attrs != "" {
		q.Set("target_session_attrs", attrs)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", c.password),
		Host: strings.Join(hosts, ","), Path: "/" + db, RawQuery: q.Encode()}
	return u.String()
}

// Close stops HAProxy, every node (Patroni stops its PostgreSQL; a
// postmaster left behind is killed with its process group) and etcd, and
// removes the cluster's folder. It is safe to call twice.
func (c *Cluster) Close() {
	c.close()
	if c.unwatch != nil {
		c.unwatch()
	}
}

func (c *Cluster) close() {
	c.closeOnce.Do(func() {
		if c.haproxy != nil {
			c.haproxy.stop(syscall.SIGTERM, 5*time.Second)
		}
		var wg sync.WaitGroup
		for _, n := range c.nodes {
			wg.Go(n.stop)
		}
		wg.Wait()
		for _, n := range c.nodes {
			n.closeProxies()
		}
		if c.etcd != nil {
			c.etcd.stop(syscall.SIGTERM, 10*time.Second)
		}
		if c.dir != "" {
			_ = os.RemoveAll(c.dir)
		}
	})
}

// Logs returns the end of every process's log (n lines each), for a failed
// test's message.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, l := range logs {
		fmt.Fprintf(&b, "--- %s: %s\n", filepath.Base(l), logTail(l, n))
	}
	return b.String()
}
