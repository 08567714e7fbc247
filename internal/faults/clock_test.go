package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// faketimeLib returns the path of libfaketime, failing the test with how to
// install it when it is missing.
func faketimeLib(t *testing.T) string {
	t.Helper()
	for _, pattern := range []string{"/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	t.Fatal("libfaketime not found: install it (Debian/Ubuntu: apt-get install faketime); the clock fault runs PostgreSQL under it")
	return ""
}

// skewedServer starts a throwaway PostgreSQL whose clock runs offset (a
// libfaketime offset such as "+3h") away from this machine's, and returns
// the URL of a migrated database on it. The server is removed when the test
// ends.
//
// The skew is put on the database, not on the holders: Go reads the time
// through the vDSO, never through libc, so libfaketime cannot move a Go
// process's clock, and a wall clock cannot be offset per process otherwise
// (time namespaces offset only the monotonic clocks). What the protocol
// depends on is the difference between the two clocks, and that is the same
// from either side.
func skewedServer(t *testing.T, offset string) string {
	t.Helper()
	ctx := context.Background()
	srv, err := pgserver.Start(ctx, pgserver.Options{Env: []string{
		"LD_PRELOAD=" + faketimeLib(t), "FAKETIME=" + offset, "FAKETIME_DONT_FAKE_MONOTONIC=1",
	}})
	if err != nil {
		t.Fatalf("start PostgreSQL under libfaketime: %v", err)
	}
	t.Cleanup(srv.Close)
	admin, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `CREATE DATABASE faults`); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, srv.URL("faults"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := data.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	return srv.URL("faults")
}

// Fault 8: the database's clock is hours away from the clock of the holder
// processes and of the monitor. Every expiry decision uses the database's
// clock (the server compares expires_at with clock_timestamp()) or the local
// monotonic clock (the holder's safe deadline, the monitor's countdown
// through data.Clock), never the one against the other, so: a `leasetop run`
// holder keeps its lease across renewals; the monitor and `leasetop ls` show
// the right time left; when the holder is cut off it stops its command
// before the lease expires on the server; the waiting run takes over after
// that expiry, not before; and the audit holds.
func TestClockSkew(t *testing.T) {
	for _, tt := range []struct {
		offset string
		want   time.Duration
	}{
		{"+3h", 3 * time.Hour},  // the holders' wall clock 3 hours behind the database's
		{"-3h", -3 * time.Hour}, // and 3 hours ahead
	} {
		t.Run(tt.offset, func(t *testing.T) { clockSkew(t, tt.offset, tt.want) })
	}
}

func clockSkew(t *testing.T, offset string, want time.Duration) {
	dsn := skewedServer(t, offset)
	r := newRigOn(t, dsn, 1)
	skew := r.serverNow().Sub(time.Now())
	if d := skew - want; d < -time.Minute || d > time.Minute {
		t.Fatalf("the database clock is %s away from this machine's, want %s: libfaketime had no effect", skew, want)
	}
	m := r.startMirror(dsn, mirrorCfg())
	proxy, via := pgtest.Proxied(r.t, r.url)
	const ttl = 3 * time.Second
	a := r.leasetopRun(via, "proc-a", "--ttl", ttl.String())
	first := r.holding(m, "proc-a")
	r.writing("proc-a")

	// It keeps the lease across renewals (a holder that compared the
	// server's expiry with its own wall clock would drop it at once, or
	// hold it for hours).
	var kept data.Lease
	waitMirror(t, m, 30*time.Second, "proc-a's lease to be renewed for more than a TTL", func(s *monitor.State) bool {
		kept, _ = s.Lease(r.keys[0])
		return kept.RunID == first.RunID && kept.RenewedAt.Sub(kept.AcquiredAt) > ttl
	})
	m.Read(func(s *monitor.State) {
		now := s.ServerNow(time.Now())
		l, _ := s.Lease(r.keys[0])
		if c := s.Counts(now); c.Held != 1 || c.Expired != 0 {
			t.Errorf("monitor counts %+v, want one held lease", c)
		}
		if f := s.Fraction(l, now); f <= 0 || f > 1 {
			t.Errorf("monitor shows %.2f of the TTL left, want between 0 and 1", f)
		}
	})
	left := lsRemaining(t, dsn)
	if left <= 0 || left > ttl.Seconds() {
		t.Errorf("leasetop ls shows %.3f s left, want between 0 and %s", left, ttl)
	}

	b := r.leasetopRun(dsn, "proc-b", "--ttl", ttl.String(), "--wait")
	pgtest.Eventually(t, 30*time.Second, "proc-b to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })
	proxy.Blackhole()
	if got := a.wait(t); got != 4 {
		t.Errorf("cut-off holder exit = %d, want 4 (lost by its local deadline); stderr: %s", got, a.Stderr.String())
	}
	if !strings.Contains(a.Stderr.String(), "local deadline passed") {
		t.Errorf("cut-off holder stderr = %q, want it lost by its local deadline", a.Stderr.String())
	}
	r.holding(m, "proc-b")
	over := r.takeover(first)
	if over.At.Before(over.PrevExpiresAt) {
		t.Errorf("taken over at %v, before the cut-off holder's lease expired at %v", over.At, over.PrevExpiresAt)
	}
	var lastWrite time.Time
	if err := r.store.Pool().QueryRow(context.Background(),
		`SELECT max(written_at) FROM leasetop_demo.output WHERE device = 'proc-a'`).Scan(&lastWrite); err != nil {
		t.Fatal(err)
	}
	stoppedBefore := over.PrevExpiresAt.Sub(lastWrite)
	if stoppedBefore <= 0 {
		t.Errorf("the cut-off holder's command wrote at %v, after its lease expired on the server at %v", lastWrite, over.PrevExpiresAt)
	}
	r.writing("proc-b")
	b.Signal(t, syscall.SIGTERM)
	if got := b.wait(t); got != 0 {
		t.Errorf("proc-b exit after SIGTERM = %d, want 0; stderr: %s", got, b.Stderr.String())
	}
	tally := r.audit(m)
	report(t, "clock-skew", append([]any{"database_clock_offset", skew.Round(time.Second), "renewed_for", kept.RenewedAt.Sub(kept.AcquiredAt),
		"ls_time_left_s", fmt.Sprintf("%.3f", left), "command_stopped_before_server_expiry_by", stoppedBefore,
		"taken_over_after_expiry_by", over.At.Sub(over.PrevExpiresAt)}, tallyKV(tally)...)...)
}

// lsRemaining runs `leasetop ls --json` on dsn and returns the first
// lease's remaining seconds.
func lsRemaining(t *testing.T, dsn string) float64 {
	t.Helper()
	out, err := exec.Command(leasetopBin, "ls", "--json", "--dsn", dsn).Output()
	if err != nil {
		t.Fatalf("leasetop ls: %v", err)
	}
	var got struct {
		Leases []struct {
			RemainingSeconds float64 `json:"remaining_seconds"`
		} `json:"leases"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got.Leases) != 1 {
		t.Fatalf("leasetop ls --json = %s (%v), want one lease", out, err)
	}
	return got.Leases[0].RemainingSeconds
}
