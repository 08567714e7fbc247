package exporter_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// seedGaugeLeases makes, through lease.acquire: leases held for an hour,
// leases with 10 minutes left (expiring in a 30 minute window) and expired
// ones, over accounts a, b, c and one literally named "other".
// secretRun is the run id seedGaugeLeases gives the lease on ($1, $2): a
// run's id is its secret (the table shows its public id), so the tests that
// renew or release a seeded lease derive it again.
const secretRun = `md5($1 || '/' || $2)::uuid`

func seedGaugeLeases(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	for _, l := range []struct {
		account, session, ttl string
	}{
		{"a", "h1", "1 hour"}, {"a", "h2", "1 hour"}, {"a", "s1", "10 minutes"},
		{"b", "h1", "1 hour"},
		{"c", "x1", "1 millisecond"},
		{"other", "s1", "10 minutes"}, {"other", "x1", "1 millisecond"},
	} {
		if _, err := pool.Exec(ctx, `SELECT lease.acquire($1, $2, `+secretRun+`, $3::interval, 'gauge test')`,
			l.account, l.session, l.ttl); err != nil {
			t.Fatalf("acquire %s/%s: %v", l.account, l.session, err)
		}
	}
	// History before the exporter starts, which its counters must not count.
	if _, err := pool.Exec(ctx, `SELECT lease.release('a', 'old', (SELECT run_id FROM lease.acquire('a', 'old', gen_random_uuid(), '1 hour', 'old')))`); err != nil {
		t.Fatalf("acquire and release a/old: %v", err)
	}
}

// dbGauges computes the lease gauges in SQL on the server clock.
func dbGauges(t *testing.T, pool *pgxpool.Pool, window string) (held, expiring, expired float64) {
	t.Helper()
	err := pool.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE expires_at > now_),
		       count(*) FILTER (WHERE expires_at > now_ AND expires_at <= now_ + $1::interval),
		       count(*) FILTER (WHERE expires_at <= now_)
		  FROM lease.session_lease, LATERAL (SELECT clock_timestamp() AS now_) c`, window).Scan(&held, &expiring, &expired)
	if err != nil {
		t.Fatalf("count leases: %v", err)
	}
	return held, expiring, expired
}

// oldestAcquired returns when the oldest unexpired lease was acquired.
func oldestAcquired(t *testing.T, pool *pgxpool.Pool) time.Time {
	t.Helper()
	var at time.Time
	err := pool.QueryRow(context.Background(), `
		SELECT min(acquired_at) FROM lease.session_lease WHERE expires_at > clock_timestamp()`).Scan(&at)
	if err != nil {
		t.Fatalf("oldest lease: %v", err)
	}
	return at
}

func TestLeaseGaugesMatchDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	pool := db.Pool(t)
	seedGaugeLeases(t, pool)
	p := startExporter(t, db.URL, "--expiring-within", "30m")
	if code, body := p.get(t, "/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz = %d %q, want 200", code, body)
	}
	pgtest.Eventually(t, 30*time.Second, "/readyz to answer 200", func() bool {
		code, _ := p.get(t, "/readyz")
		return code == http.StatusOK
	})

	oldest := oldestAcquired(t, pool)
	t0 := time.Now()
	m := p.metrics(t)
	t1 := time.Now()
	held, expiring, expired := dbGauges(t, pool, "30 minutes")
	for name, want := range map[string]float64{
		"leasetop_leases_held": held, "leasetop_leases_expiring": expiring, "leasetop_leases_expired_unclaimed": expired,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %g (present %v), want %g (from the database)", name, got, ok, want)
		}
	}
	if held != 5 || expiring != 2 || expired != 2 {
		t.Fatalf("database counts held %g, expiring %g, expired %g; the test wrote 5, 2, 2", held, expiring, expired)
	}
	// The age is the exporter's server-clock estimate at the scrape minus the
	// oldest unexpired lease's acquired_at; the estimate is the local clock
	// plus the offset it exports, and the scrape came between t0 and t1 on
	// the same machine's clock. So the bounds hold exactly, whatever the
	// load: no bound on how long anything took (1 ms for the wall clock's
	// slew against the monotonic one, since the exporter measured).
	off := m["leasetop_server_clock_offset_seconds"]
	lo, hi := t0.Sub(oldest).Seconds()+off-1e-3, t1.Sub(oldest).Seconds()+off+1e-3
	if got := m["leasetop_oldest_lease_age_seconds"]; got < lo || got > hi {
		t.Errorf("leasetop_oldest_lease_age_seconds = %g, want between %g and %g (the scrape's time on the exporter's server clock, offset %g s, minus the oldest acquired_at %v)",
			got, lo, hi, off, oldest)
	}
	for kind, n := range m.transitions() {
		if n != 0 {
			t.Errorf("leasetop_transitions_total{kind=%q} = %d, want 0: the history before the exporter started is not counted", kind, n)
		}
	}
	if got := m[`leasetop_feed_state{state="live"}`]; got != 1 {
		t.Errorf(`leasetop_feed_state{state="live"} = %g, want 1`, got)
	}
	if off, ok := m["leasetop_server_clock_offset_seconds"]; !ok || math.Abs(off) > 1 {
		t.Errorf("leasetop_server_clock_offset_seconds = %g (present %v), want near 0 on one machine", off, ok)
	}

	// The first transition after the start is counted.
	if _, err := pool.Exec(context.Background(), `SELECT lease.acquire('b', 'late', gen_random_uuid(), '1 hour', 'late')`); err != nil {
		t.Fatal(err)
	}
	p.waitMetrics(t, 30*time.Second, "the acquire after the start to be counted", func(m metricSet) bool {
		return m.transitions()["acquired"] == 1 && m["leasetop_leases_held"] == 6
	})
	// A renewal (seen by the feed's once-a-second read) moves a lease out of
	// the expiring window; a release removes one.
	for _, s := range []string{
		`SELECT lease.renew('a', 's1', md5('a/s1')::uuid, '1 hour')`,
		`SELECT lease.release('a', 'h1', md5('a/h1')::uuid)`,
	} {
		if _, err := pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	m = p.waitMetrics(t, 30*time.Second, "the renewal and the release", func(m metricSet) bool {
		return m["leasetop_leases_expiring"] == 1 && m["leasetop_leases_held"] == 5
	})
	held, expiring, expired = dbGauges(t, pool, "30 minutes")
	if m["leasetop_leases_held"] != held || m["leasetop_leases_expiring"] != expiring || m["leasetop_leases_expired_unclaimed"] != expired {
		t.Errorf("after a renewal and a release: held %g, expiring %g, expired %g; the database has %g, %g, %g",
			m["leasetop_leases_held"], m["leasetop_leases_expiring"], m["leasetop_leases_expired_unclaimed"], held, expiring, expired)
	}
}

func TestLeaseGaugesByAccount(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	pool := db.Pool(t)
	seedGaugeLeases(t, pool)
	p := startExporter(t, db.URL, "--expiring-within", "30m", "--by-account", "--max-accounts", "2")
	m := p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	// a has the most held leases, then b; c and the account named "other"
	// share the "other" series.
	want := map[string][3]float64{"a": {3, 1, 0}, "b": {1, 0, 0}, "other": {1, 1, 2}}
	for account, w := range want {
		for i, name := range []string{"leasetop_leases_held", "leasetop_leases_expiring", "leasetop_leases_expired_unclaimed"} {
			series := fmt.Sprintf("%s{account=%q}", name, account)
			if got, ok := m[series]; !ok || got != w[i] {
				t.Errorf("%s = %g (present %v), want %g", series, got, ok, w[i])
			}
		}
	}
	for _, name := range []string{"leasetop_leases_held", `leasetop_leases_held{account="c"}`} {
		if _, ok := m[name]; ok {
			t.Errorf("%s is exported; with --by-account --max-accounts 2 only a, b and other are", name)
		}
	}
	// Releasing a's first lease frees its slot in the state's columns:
	// every account's figures must stay right.
	if _, err := pool.Exec(context.Background(), `SELECT lease.release('a', 'h1', md5('a/h1')::uuid)`); err != nil {
		t.Fatal(err)
	}
	// The event and the row it removes can reach the exporter in separate
	// items: wait for both, then check every account.
	m = p.waitMetrics(t, 30*time.Second, "the release", func(m metricSet) bool {
		return m.transitions()["released"] == 1 && m[`leasetop_leases_held{account="a"}`] == 2
	})
	want["a"] = [3]float64{2, 1, 0}
	for account, w := range want {
		for i, name := range []string{"leasetop_leases_held", "leasetop_leases_expiring", "leasetop_leases_expired_unclaimed"} {
			series := fmt.Sprintf("%s{account=%q}", name, account)
			if got := m[series]; got != w[i] {
				t.Errorf("after a's release: %s = %g, want %g", series, got, w[i])
			}
		}
	}
	for series := range m {
		for _, label := range []string{"session", "run", "holder"} {
			if containsLabel(series, label) {
				t.Errorf("series %s has a %s label: unbounded", series, label)
			}
		}
	}
}

func containsLabel(series, label string) bool {
	return strings.Contains(series, "{"+label+"=") || strings.Contains(series, ","+label+"=")
}

// TestHistogramsFromEvents checks the hold time at release and the takeover
// delay against the event rows they come from.
func TestHistogramsFromEvents(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	pool := db.Pool(t)
	bin := pgtest.PSQLPath(t)
	p := startExporter(t, db.URL)
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })

	for _, s := range []string{
		`SELECT lease.acquire('h', 'rel', '10000000-0000-0000-0000-000000000001', '1 hour', 'psql')`,
		`SELECT lease.release('h', 'rel', '10000000-0000-0000-0000-000000000001')`,
		`SELECT lease.acquire('h', 'force', gen_random_uuid(), '1 hour', 'psql')`,
		`SELECT lease.force_release('h', 'force', NULL, 'histogram test')`,
		`SELECT lease.acquire('h', 'take', gen_random_uuid(), '1 millisecond', 'psql')`,
		`SELECT lease.acquire('h', 'take', gen_random_uuid(), '1 hour', 'psql')`,
	} {
		pgtest.PSQL(t, bin, db.URL, s)
	}
	want := waitCounted(t, p, pool, "the six transitions")
	if want["taken_over"] != 1 {
		t.Fatalf("lease.event has %d taken_over events, want 1", want["taken_over"])
	}
	var hold, delay float64
	err := pool.QueryRow(context.Background(), `
		SELECT (SELECT sum(extract(epoch FROM r.at - a.at))::float8 FROM lease.event r
		          JOIN lease.event a ON a.run_id = r.run_id AND a.kind = 'acquired'
		         WHERE r.kind IN ('released', 'force_released')),
		       (SELECT extract(epoch FROM at - prev_expires_at)::float8 FROM lease.event WHERE kind = 'taken_over')`).Scan(&hold, &delay)
	if err != nil {
		t.Fatalf("read hold time and takeover delay: %v", err)
	}
	m := p.metrics(t)
	for _, c := range []struct {
		name     string
		count    float64
		sum      float64
		relation string
	}{
		{"leasetop_hold_seconds", 2, hold, "release.at - acquire.at of each run"},
		{"leasetop_takeover_delay_seconds", 1, delay, "at - prev_expires_at of the takeover"},
	} {
		if got := m[c.name+"_count"]; got != c.count {
			t.Errorf("%s_count = %g, want %g", c.name, got, c.count)
		}
		if got := m[c.name+"_sum"]; math.Abs(got-c.sum) > 1e-6 {
			t.Errorf("%s_sum = %.6f, want %.6f (%s)", c.name, got, c.sum, c.relation)
		}
	}
	if got := m["leasetop_event_lag_seconds_count"]; got != 6 {
		t.Errorf("leasetop_event_lag_seconds_count = %g, want 6 (one per counted event)", got)
	}
}

// TestExporterAsLeaseReader runs the exporter as a login that is only a
// lease_reader: it needs nothing but SELECT.
func TestExporterAsLeaseReader(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	pool := db.Pool(t)
	ctx := context.Background()
	p := startExporter(t, db.ReaderURL(t))
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	if _, err := pool.Exec(ctx, `SELECT lease.acquire('acme', 'chat-1', gen_random_uuid(), '1 hour', 'app')`); err != nil {
		t.Fatal(err)
	}
	m := p.waitMetrics(t, 30*time.Second, "the acquire to be counted", func(m metricSet) bool {
		return m.transitions()["acquired"] == 1 && m["leasetop_leases_held"] == 1
	})
	if got := m[`leasetop_feed_state{state="live"}`]; got != 1 {
		t.Errorf(`leasetop_feed_state{state="live"} = %g as a lease_reader, want 1; stderr: %s`, got, p.Stderr.String())
	}
}
