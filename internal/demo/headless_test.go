package demo_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// summaryCount reads one count from the demo's summary.
func summaryCount(t *testing.T, out, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `\s+(\d+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the summary has no count %q:\n%s", name, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestHeadlessDemoPassesItsInvariantCheck is the CI run of the demo: real
// device processes, real chaos, on a database of its own; every invariant
// must hold, the chaos must have had its effects, and on a database it was
// given (--dsn) the demo must remove what it created.
func TestHeadlessDemoPassesItsInvariantCheck(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	p := startLeasetop(t, "demo", "--headless", "--duration", "16s", "--ttl", "2s", "--seed", "3", "--dsn", db.URL)
	checkHeadlessRun(t, p, db, db.URL)
}

// checkHeadlessRun waits for a 16 s headless demo with a 2 s TTL on db,
// reached through dsn, and checks what it reports and leaves: every
// invariant ok, the chaos's effects counted, every device stopped, no
// password shown, nothing of the demo left but the history.
func checkHeadlessRun(t *testing.T, p *demoProc, db pgtest.DB, dsn string) {
	t.Helper()
	code := p.wait(90 * time.Second)
	out := p.stdout()
	if code != 0 {
		t.Fatalf("leasetop demo --headless exited %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, p.stderr.String())
	}
	for n := 1; n <= 8; n++ {
		if !regexp.MustCompile(`(?m)^  ok    ` + strconv.Itoa(n) + `\. `).MatchString(out) {
			t.Errorf("invariant %d is not reported ok:\n%s", n, out)
		}
	}
	for _, name := range []string{
		"runs started", "refusals (busy: owner and time left shown)", "takeovers after process loss",
		"zombie renewals rejected", "stale-fence writes refused", "forced releases",
		"writes accepted through the fence check",
	} {
		if got := summaryCount(t, out, name); got == 0 {
			t.Errorf("summary: %s = 0, want > 0 in 16 s of demo with a 2 s TTL\n%s", name, out)
		}
	}
	checkDeviceSummary(t, out)
	if strings.Contains(out, dsn) || strings.Contains(p.stderr.String(), dsn) {
		t.Error("the output reveals the database URL with its password")
	}

	ctx := context.Background()
	pool := db.Pool(t)
	var leases, events int
	var schema bool
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM lease.session_lease),
			(SELECT count(*) FROM lease.event WHERE account_id LIKE 'demo-%'),
			to_regnamespace('leasetop_demo') IS NOT NULL`).Scan(&leases, &events, &schema); err != nil {
		t.Fatal(err)
	}
	if leases != 0 || schema {
		t.Errorf("after the demo: %d leases left, demo schema left = %v; want 0 and false", leases, schema)
	}
	if events == 0 {
		t.Error("after the demo: no events of the demo's accounts; want the history kept")
	}
}

// brokenAcquire replaces lease.acquire, in one test's database, with one
// that grants the session whether or not another run's lease expired: the
// double grant the demo's check must catch.
// Its signature is lease.acquire's own, so it replaces it rather than
// adding an overload that no call would reach.
const brokenAcquire = `
CREATE OR REPLACE FUNCTION lease.acquire(
    account_id text, session_id text, run_id uuid, ttl interval, holder text,
    pool text DEFAULT '', priority smallint DEFAULT 0)
RETURNS SETOF lease.grant
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease
AS $fn$
    INSERT INTO lease.session_lease AS l
        (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
    VALUES (acquire.account_id, acquire.session_id, acquire.run_id, acquire.holder,
            nextval('lease.fence_seq'), clock_timestamp(), clock_timestamp(), clock_timestamp() + acquire.ttl)
    ON CONFLICT (account_id, session_id) DO UPDATE
        SET run_id = EXCLUDED.run_id, holder = EXCLUDED.holder, fence = nextval('lease.fence_seq'),
            acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
    RETURNING l.run_id, l.fence, l.expires_at
$fn$`

// TestHeadlessDemoFailsOnABrokenProtocol proves the demo's check is not one
// that cannot fail: with a lease.acquire that double-grants, the same demo
// reports invariant 1 broken and exits 1.
func TestHeadlessDemoFailsOnABrokenProtocol(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	if _, err := db.Pool(t).Exec(context.Background(), brokenAcquire); err != nil {
		t.Fatalf("install the broken acquire: %v", err)
	}
	var overloads int
	if err := db.Pool(t).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_proc WHERE proname = 'acquire' AND pronamespace = 'lease'::regnamespace`).Scan(&overloads); err != nil || overloads != 1 {
		t.Fatalf("lease.acquire has %d overloads (%v) after the broken one: it must replace the real one, not sit beside it", overloads, err)
	}
	p := startLeasetop(t, "demo", "--headless", "--duration", "6s", "--ttl", "2s", "--seed", "5", "--no-chaos", "--dsn", db.URL)
	code := p.wait(60 * time.Second)
	out := p.stdout()
	if code != 1 {
		t.Fatalf("exit code = %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, p.stderr.String())
	}
	if !regexp.MustCompile(`(?m)^  FAIL  1\. never two unexpired owners`).MatchString(out) ||
		!strings.Contains(out, "two owners for") {
		t.Errorf("the summary does not report the double grant:\n%s", out)
	}
	if errOut := withoutDSNWarning(p.stderr.String()); strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "invariant violations") {
		t.Errorf("stderr = %q, want one line about the violations", errOut)
	}
}

// deviceLine is a line of the summary's devices block.
var deviceLine = regexp.MustCompile(`(?m)^  (\S+ \S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/(\d+)  (.*)$`)

// checkDeviceSummary: the summary lists every device process as it
// reported itself through the database, and their runs add up to the runs
// the database granted, but for what a killed process had no time to
// report (at most one run per conversation: two).
func checkDeviceSummary(t *testing.T, out string) {
	t.Helper()
	_, block, ok := strings.Cut(out, "devices (each process as it reported itself")
	block, _, _ = strings.Cut(block, "invariants:")
	if !ok {
		t.Fatalf("the summary has no devices block:\n%s", out)
	}
	lines := deviceLine.FindAllStringSubmatch(block, -1)
	runs, stopped := 0, 0
	for _, l := range lines {
		n, _ := strconv.Atoi(l[3])
		runs += n
		if l[7] == "stopped" {
			stopped++
		}
	}
	kills := 0
	if m := regexp.MustCompile(`(\d+) kill -9`).FindStringSubmatch(out); m != nil {
		kills, _ = strconv.Atoi(m[1])
	}
	granted := summaryCount(t, out, "runs started")
	if len(lines) < 6 || stopped < 6 || runs > granted || runs < granted-2*kills {
		t.Errorf("devices block: %d processes, %d stopped, %d runs; want at least 6 and 6, and runs in [%d, %d] (%d granted, %d killed):\n%s",
			len(lines), stopped, runs, granted-2*kills, granted, granted, kills, block)
	}
}
