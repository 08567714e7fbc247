package exporter_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/exporter"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// keepAlive dials the exporter and makes one keep-alive request on the
// connection, reading its answer, and returns the open connection.
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial the exporter: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second)) // as httpGet's
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read /healthz on a keep-alive connection: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("/healthz = %d (close %v), want 200 on a connection kept alive", resp.StatusCode, resp.Close)
	}
	return c
}

// TestExporterClosesIdleConnections: a local user keeps 200 keep-alive
// connections open and idle after one request each. The exporter closes
// every one of them after its idle timeout. Without one it would keep them
// open for ever (3000 of them took its RSS from 18 to 77 MB).
func TestExporterClosesIdleConnections(t *testing.T) {
	db := pgtest.New(t)
	p := startExporter(t, db.ReaderURL(t))
	conns := make([]net.Conn, 200)
	for i := range conns {
		conns[i] = keepAlive(t, p.addr)
	}
	deadline := time.Now().Add(exporter.IdleTimeout + time.Minute)
	for i, c := range conns {
		_ = c.SetReadDeadline(deadline)
		n, err := c.Read(make([]byte, 1))
		if n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection %d: read %d bytes, err %v; want the exporter to close it (EOF) within its idle timeout %v", i, n, err, exporter.IdleTimeout)
		}
	}
}

// TestExporterConnectionCapKeepsDatabaseReachable: the exporter runs with
// 200 file descriptors, and a local user opens 300 connections to it, each
// with a request. The exporter serves at most half its descriptors' worth
// (100) at once and leaves the rest in the kernel's backlog, so when its
// database connections are killed meanwhile, it reconnects; once the user
// goes, scrapes succeed. An exporter that accepted every connection would
// run out: accept(2) and its database reconnects fail with "too many open
// files".
func TestExporterConnectionCapKeepsDatabaseReachable(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	dsn := db.ReaderURL(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startLimited(t, dsn)
	p.waitMetrics(t, 30*time.Second, "the feed live", func(m metricSet) bool { return m[`leasetop_feed_state{state="live"}`] == 1 })

	lives := strings.Count(p.Stderr.String(), "exporter: feed live")
	var conns []net.Conn
	for range 300 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatalf("dial the exporter: %v", err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: exporter\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	var killed int
	if err := db.Conn(t).QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = $1`,
		u.User.Username()).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminate the exporter's backends: %d, %v", killed, err)
	}
	pgtest.Eventually(t, time.Minute, "the exporter to reconnect to the database while 300 clients are connected", func() bool {
		return strings.Count(p.Stderr.String(), "exporter: feed live") > lives
	})
	if strings.Contains(p.Stderr.String(), "too many open files") {
		t.Errorf("the exporter ran out of file descriptors: %s", p.Stderr.String())
	}
	for _, c := range conns {
		c.Close()
	}
	m := p.metrics(t)
	if got := m[`leasetop_feed_state{state="live"}`]; got != 1 {
		t.Errorf(`after the clients left, leasetop_feed_state{state="live"} = %g, want 1; stderr: %s`, got, p.Stderr.String())
	}
}

// startLimited starts the exporter with 200 file descriptors: it serves at
// most 100 connections at once.
func startLimited(t *testing.T, dsn string) *exporterProc {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 200 && exec "$@"`, "sh",
		leasetopBin, "exporter", "--listen", "127.0.0.1:0", "--dsn", dsn)
	p := waitServing(t, launchCmd(t, cmd))
	if want := fmt.Sprintf("(at most %d connections)", exporter.ConnCap(200)); !strings.Contains(p.Stderr.String(), want) {
		t.Errorf("stderr does not say %q: %s", want, p.Stderr.String())
	}
	return p
}

// TestIdleConnectionsCannotKeepAScraperOut: a local user fills the
// exporter's connection cap (100 here) with idle keep-alive connections,
// and opens 50 more. Each new one is served at once: the exporter closes
// the connection idle the longest to make room, so the user's first 50 are
// closed, the last 100 still open, and a scrape succeeds. Without that, the
// 101st connection waited for the idle timeout (30 s).
func TestIdleConnectionsCannotKeepAScraperOut(t *testing.T) {
	db := pgtest.New(t)
	p := startLimited(t, db.ReaderURL(t))
	conns := make([]net.Conn, 150)
	for i := range conns {
		conns[i] = keepAlive(t, p.addr)
	}
	p.metrics(t)
	closed := 0
	for _, c := range conns[:50] {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			closed++
		}
	}
	// The exporter orders connections by when it saw them become idle,
	// which can trail the answer a client reads: allow a swap at the edge.
	if closed < 48 {
		t.Errorf("%d of the 50 connections idle the longest were closed to make room, want (nearly) all 50", closed)
	}
}

// TestScrapesWaitTheirTurn: 32 local clients fetch /metrics in a loop; a
// real scraper's 20 scrapes among them all succeed (they wait their turn).
// An exporter that refused a scrape with a 503 while 4 were in flight
// failed 31 of 50.
func TestScrapesWaitTheirTurn(t *testing.T) {
	db := pgtest.New(t)
	p := startExporter(t, db.ReaderURL(t))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// One keep-alive connection per client, as a loop would keep: no new
	// connection (and no port in TIME_WAIT) per request.
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	defer tr.CloseIdleConnections()
	for range 32 {
		wg.Go(func() {
			c := http.Client{Timeout: time.Minute, Transport: tr}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if resp, err := c.Get("http://" + p.addr + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	refused := 0
	for range 20 {
		code, body, err := httpGet("http://" + p.addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape among 32 clients: %v", err)
		}
		if code != http.StatusOK {
			refused++
			t.Logf("scrape = %d: %s", code, strings.TrimSpace(body))
		}
	}
	if refused > 0 {
		t.Errorf("%d of 20 scrapes among 32 clients fetching /metrics in a loop were refused, want 0", refused)
	}
}
