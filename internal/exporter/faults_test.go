package exporter_test

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// passwordWarning is the line every command prints first when --dsn carries a
// password (the process list shows it to every local user).
const passwordWarning = "leasetop: warning: --dsn carries a password"

// withoutPasswordWarning fails t unless out starts with the password
// warning, and returns the rest.
func withoutPasswordWarning(t *testing.T, what, out string) string {
	t.Helper()
	first, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, passwordWarning) {
		t.Errorf("%s: stderr = %q, want the password warning first", what, out)
		return out
	}
	return rest
}

// oneLine fails t unless out is exactly one line that contains want.
func oneLine(t *testing.T, what, out, want string) {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || !strings.Contains(out, want) {
		t.Errorf("%s: stderr = %q, want one line containing %q", what, out, want)
	}
}

func TestExporterBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"extra"}, `exporter takes no arguments, got "extra"`},
		{[]string{"--expiring-within", "0s"}, "exporter: --expiring-within must be more than 0 and at most 24h0m0s, got 0s"},
		{[]string{"--expiring-within", "soon"}, `invalid value "soon" for flag -expiring-within`},
		{[]string{"--by-account", "--max-accounts", "0"}, "--max-accounts must be between 1 and 1000, got 0"},
		{[]string{"--max-accounts", "5"}, "--max-accounts needs --by-account"},
		{[]string{"--max-limits", "0"}, "--max-limits must be between 1 and 1000, got 0"},
		{[]string{"--listen", "9187"}, `--listen "9187": missing port in address`},
		{[]string{"--listen", "127.0.0.1:99999"}, "port must be a number from 0 to 65535"},
		{[]string{"--dsn", "postgres://u:hunter2@[::1/db"}, "invalid database URL"},
	} {
		p := launch(t, append([]string{"exporter"}, c.args...)...)
		if code := p.Wait(t, 30*time.Second); code != 2 {
			t.Errorf("exporter %v: exit %d, want 2; stderr %q", c.args, code, p.Stderr.String())
		}
		out := p.Stderr.String()
		if strings.Contains(strings.Join(c.args, " "), "hunter2") {
			out = withoutPasswordWarning(t, strings.Join(c.args, " "), out)
		}
		oneLine(t, strings.Join(c.args, " "), out, c.want)
		if strings.Contains(p.Stderr.String(), "hunter2") {
			t.Errorf("exporter %v: stderr shows the password: %q", c.args, p.Stderr.String())
		}
	}
}

func TestExporterPortInUse(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := launch(t, "exporter", "--listen", ln.Addr().String(), "--dsn", db.URL)
	if code := p.Wait(t, 30*time.Second); code != 1 {
		t.Errorf("exporter on a port in use: exit %d, want 1; stderr %q", code, p.Stderr.String())
	}
	oneLine(t, "port in use", p.Stderr.String(), "address already in use")
}

func TestExporterDatabaseUnreachableAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	p := launch(t, "exporter", "--listen", "127.0.0.1:0", "--dsn", "postgres://u:secret@127.0.0.1:"+strconv.Itoa(port)+"/db")
	if code := p.Wait(t, 30*time.Second); code != 1 {
		t.Errorf("exporter with no database: exit %d, want 1; stderr %q", code, p.Stderr.String())
	}
	oneLine(t, "database unreachable", withoutPasswordWarning(t, "database unreachable", p.Stderr.String()), "cannot connect to 127.0.0.1:"+strconv.Itoa(port))
	if strings.Contains(p.Stderr.String(), "secret") {
		t.Errorf("stderr shows the password: %q", p.Stderr.String())
	}
}

// TestExporterDatabaseDown cuts the database away from a running exporter:
// /metrics keeps answering 200, the feed state turns down and the time since
// the last read grows; SIGTERM then stops the exporter with exit 0.
func TestExporterDatabaseDown(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	proxy, dsn := pgtest.Proxied(t, db.URL)
	p := startExporter(t, dsn)
	p.waitMetrics(t, 30*time.Second, "the feed to be live", func(m metricSet) bool {
		return m[`leasetop_feed_state{state="live"}`] == 1 && m["leasetop_resyncs_total"] >= 1
	})

	cut := time.Now()
	proxy.Close() // every connection closed, and nothing listens on its port any more
	m := p.waitMetrics(t, 60*time.Second, "the feed state to turn down", func(m metricSet) bool {
		return m[`leasetop_feed_state{state="down"}`] == 1
	})
	for _, st := range []string{"live", "reconnecting", "poll"} {
		if got := m[`leasetop_feed_state{state="`+st+`"}`]; got != 0 {
			t.Errorf(`leasetop_feed_state{state=%q} = %g while down, want 0`, st, got)
		}
	}
	t.Logf("FAULT exporter-database-down down_after=%v", time.Since(cut).Round(time.Millisecond))
	age := m["leasetop_feed_sync_age_seconds"]
	p.waitMetrics(t, 30*time.Second, "the time since the last read to grow", func(m metricSet) bool {
		return m["leasetop_feed_sync_age_seconds"] > age+0.5
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := p.get(t, path); code != http.StatusOK {
			t.Errorf("GET %s with the database down = %d %q, want 200 (the process serves; the first sync was done)", path, code, body)
		}
	}
	for _, line := range []string{"exporter: connection lost, reconnecting: ", "exporter: feed down, still retrying: "} {
		if !strings.Contains(p.Stderr.String(), line) {
			t.Errorf("stderr does not say %q: %q", line, p.Stderr.String())
		}
	}

	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("exporter after SIGTERM: exit %d, want 0; stderr %q", code, p.Stderr.String())
	}
	t.Logf("exporter stderr:\n%s", p.Stderr.String())
}
