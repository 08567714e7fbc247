package pgserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// startCluster starts a Patroni cluster for one test, closed when it ends.
// Without patroni or etcd the test fails, saying how to install them.
func startCluster(t *testing.T, opts pgserver.ClusterOptions) *pgserver.Cluster {
	t.Helper()
	c, err := pgserver.StartCluster(context.Background(), opts)
	if errors.Is(err, pgserver.ErrNoPatroni) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("start the Patroni cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestPatroniCluster starts the harness's Patroni cluster (etcd, two nodes
// in synchronous_mode, HAProxy) and shows it is one: exactly one primary,
// a synchronous standby, a write through the multi-host DSN and one through
// HAProxy both land on the primary and are on the standby once they return;
// a switchover moves the primary, the old one rejoins as a replica, and
// both ways follow; Close stops
// every process it started (Patroni, each postmaster, etcd, HAProxy) and
// removes the folder. It logs the start-up time and the memory used.
func TestPatroniCluster(t *testing.T) {
	ctx := context.Background()
	c := startCluster(t, pgserver.ClusterOptions{Replication: pgserver.Synchronous, HAProxy: true})
	mem := c.Memory()
	t.Logf("PATRONI start-up=%s processes=%d rss=%dMiB pss=%dMiB (etcd, 2 nodes, HAProxy)",
		c.StartedIn().Round(time.Millisecond), mem.Processes, mem.RSSKiB>>10, mem.PSSKiB>>10)
	if mem.Processes < 6 || mem.PSSKiB == 0 {
		t.Errorf("Memory() = %+v: want at least etcd, HAProxy, 2 Patroni and 2 postmasters, with their memory", mem)
	}
	primary, err := c.Primary(ctx, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	standby, err := c.WaitSync(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, connect(t, c.DSN("postgres")), `CREATE TABLE t (via text)`)
	write := func(dsn, via string) string {
		t.Helper()
		conn := connect(t, dsn)
		exec(t, conn, `INSERT INTO t VALUES ('`+via+`')`)
		var port string
		if err := conn.QueryRow(ctx, `SELECT current_setting('port')`).Scan(&port); err != nil {
			t.Fatal(err)
		}
		return port
	}
	// onStandby waits for the row on the synchronous standby. Its commit
	// returned once the standby had flushed the WAL (synchronous_commit on,
	// not remote_apply), so the standby may still be replaying it, the
	// table's creation included: wait for the replay, not for the commit.
	onStandby := func(via string) bool {
		t.Helper()
		conn := connect(t, c.URL(standby, "postgres"))
		for deadline := time.Now().Add(10 * time.Second); ; {
			var n int
			err := conn.QueryRow(ctx, `SELECT count(*) FROM t WHERE via = $1`, via).Scan(&n)
			if err == nil && n == 1 {
				return true
			}
			if time.Now().After(deadline) {
				t.Logf("the standby after 10 s: %d rows through the %s (%v)", n, via, err)
				return false
			}
			time.Sleep(20 * time.Millisecond) // polling the standby's replay, with a deadline
		}
	}
	for _, w := range []struct{ via, dsn string }{{"dsn", c.DSN("postgres")}, {"haproxy", c.HAProxyURL("postgres")}} {
		if got := write(w.dsn, w.via); got != itoa(primary.PGPort) {
			t.Errorf("a write through the %s landed on port %s, want the primary's %d", w.via, got, primary.PGPort)
		}
		if !onStandby(w.via) {
			t.Errorf("the write through the %s did not reach the synchronous standby", w.via)
		}
	}

	if err := c.Switchover(ctx, primary, standby); err != nil {
		t.Fatal(err)
	}
	next, err := c.Primary(ctx, 60*time.Second, primary)
	if err != nil {
		t.Fatal(err)
	}
	if next != standby {
		t.Fatalf("after the switchover %s is the primary, want %s", next.Name, standby.Name)
	}
	if _, err := primary.WaitRejoined(ctx, 60*time.Second, next); err != nil {
		t.Fatalf("the old primary did not rejoin as a replica: %v", err)
	}
	for _, w := range []struct{ via, dsn string }{{"dsn", c.DSN("postgres")}, {"haproxy", c.HAProxyURL("postgres")}} {
		var got string
		deadline := time.Now().Add(30 * time.Second)
		for { // HAProxy notices within its checks (200 ms apart, rise 2)
			conn, err := pgxConnect(ctx, w.dsn)
			if err == nil {
				_ = conn.QueryRow(ctx, `SELECT current_setting('port')`).Scan(&got)
				conn.Close(ctx)
			}
			if got == itoa(next.PGPort) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond) // polling a condition until the deadline
		}
		if got != itoa(next.PGPort) {
			t.Errorf("after the switchover the %s reaches port %s, want the new primary's %d", w.via, got, next.PGPort)
		}
	}

	dir := c.Dir()
	if procs := processesUnder(dir); len(procs) < 6 {
		t.Fatalf("%d processes name the cluster's folder before Close, want etcd, HAProxy, 2 Patroni, 2 postmasters: %v", len(procs), procs)
	}
	c.Close()
	if procs := processesUnder(dir); len(procs) != 0 {
		t.Errorf("after Close these processes still run: %v", procs)
	}
	if _, err := os.Stat(filepath.Clean(dir)); !os.IsNotExist(err) {
		t.Errorf("the cluster's folder %s is still there after Close (stat: %v)", dir, err)
	}
}

// processesUnder returns the command lines of the running processes whose
// command line names dir (the cluster's configuration files, data
// directories and logs are all in it).
func processesUnder(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), dir) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// pgxConnect connects to dsn (nil connection on error; the caller retries).
func pgxConnect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pgx.Connect(ctx, dsn)
}
