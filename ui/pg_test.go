package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// sqlAcquire acquires k for a fresh run with plain SQL and returns the run's
// public id, the one the monitor shows.
func sqlAcquire(t *testing.T, conn *pgx.Conn, k data.Key, ttl, holder string) uuid.UUID {
	t.Helper()
	r := uuid.New()
	var got uuid.UUID
	err := conn.QueryRow(context.Background(), `SELECT run_id FROM lease.acquire($1, $2, $3, $4::interval, $5)`,
		k.Account, k.Session, r, ttl, holder).Scan(&got)
	if err != nil || got != r {
		t.Fatalf("acquire %v: run %v err %v, want %v", k, got, err, r)
	}
	return data.PublicRunID(r)
}

func TestLiveAcquireAppearsAndTakeoverShows(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	conn := db.Conn(t)
	d := liveModel(t, db.Store(t), false, 120, 30)
	d.waitScreen("no leases held")

	k := data.Key{Account: "acme", Session: "chat-live"}
	old := sqlAcquire(t, conn, k, "400 ms", "device-a")
	d.waitScreen("chat-live")
	d.waitScreen(shortRun(old))

	pgtest.WaitExpired(t, conn, k)
	d.waitScreen("expired")
	nu := sqlAcquire(t, conn, k, "1 min", "device-b")
	d.waitScreen("taken over")
	out := screen(d.m)
	if !strings.Contains(out, fmt.Sprintf("run %s→%s", shortRun(old), shortRun(nu))) || !strings.Contains(out, "after expiry") {
		t.Errorf("the takeover line does not show old→new run and the time since expiry:\n%s", out)
	}
	if l, ok := d.m.state.Lease(k); !ok || l.RunID != nu || l.Holder != "device-b" {
		t.Errorf("state lease = %+v, want run %v held by device-b", l, nu)
	}
}

func TestForcedReleaseThroughKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	target := data.Key{Account: "acme", Session: "stuck"}
	keep := data.Key{Account: "acme", Session: "healthy"}
	run := sqlAcquire(t, conn, target, "1 min", "device-7")
	sqlAcquire(t, conn, keep, "1 min", "device-8")
	d := liveModel(t, db.Store(t), false, 100, 30)
	d.waitFor("both leases", func(m *Model) bool { return len(m.rows) == 2 })

	d.selectSession(target)
	d.press("x")
	if d.m.dialog == nil || !strings.Contains(screen(d.m), run.String()) {
		t.Fatalf("the dialog is not open on %v:\n%s", run, screen(d.m))
	}
	d.press("tab")
	d.press(strings.Split("device wedged", "")...)
	d.press("enter", "y")
	d.waitFor("the release's outcome", func(m *Model) bool { return strings.HasPrefix(m.status, "force released") })
	d.waitFor("the row to go", func(m *Model) bool { _, ok := m.state.Lease(target); return !ok && len(m.rows) == 1 })
	d.waitScreen("force released")

	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease WHERE session_id = 'stuck'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows for the released session = %d (%v), want 0", n, err)
	}
	var actor, reason string
	var evRun uuid.UUID
	err := conn.QueryRow(ctx, `SELECT actor, reason, run_id FROM lease.event WHERE kind = 'force_released'`).Scan(&actor, &reason, &evRun)
	if err != nil || actor != "postgres" || reason != "device wedged" || evRun != run {
		t.Errorf("force_released event: actor %q reason %q run %v (%v), want postgres, the reason and run %v", actor, reason, evRun, err, run)
	}
	if _, ok := d.m.state.Lease(keep); !ok {
		t.Error("the other lease disappeared")
	}
}

// TestStaleRunConfirmReleasesNothing: the lease changes hands while the
// dialog is open; confirming names the run that was shown, so nothing is
// released and the user is told who holds it now.
func TestStaleRunConfirmReleasesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "contended"}
	shown := sqlAcquire(t, conn, k, "300 ms", "device-old")
	d := liveModel(t, db.Store(t), false, 100, 30)
	d.waitFor("the lease", func(m *Model) bool { return len(m.rows) == 1 })
	d.press("x")
	if d.m.dialog == nil || d.m.dialog.lease.RunID != shown {
		t.Fatalf("dialog not open on the shown run %v", shown)
	}
	pgtest.WaitExpired(t, conn, k)
	now := sqlAcquire(t, conn, k, "1 min", "device-new")
	d.waitScreen("now held by run " + shortRun(now))
	d.press("y")
	d.waitFor("the outcome", func(m *Model) bool { return strings.HasPrefix(m.status, "nothing released") })
	if want := "changed hands (now held by run " + shortRun(now) + ", holder device-new)"; !strings.Contains(d.m.status, want) {
		t.Errorf("status %q, want it to contain %q", d.m.status, want)
	}
	var held uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT run_id FROM lease.session_lease`).Scan(&held); err != nil || held != now {
		t.Errorf("lease now run %v (%v), want the new run %v untouched", held, err, now)
	}
	var forced int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'force_released'`).Scan(&forced); err != nil || forced != 0 {
		t.Errorf("force_released events = %d (%v), want 0", forced, err)
	}
}

// TestListenerTerminatedThenLive: the listener's backend is terminated while
// the database refuses new connections; the header shows RECONNECTING; once
// connections are allowed again it is LIVE and equal to the database,
// including what changed during the outage.
func TestListenerTerminatedThenLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "before"}, "1 min", "dev")
	d := liveModel(t, db.Store(t), false, 120, 30)
	d.waitScreen("● LIVE")
	d.waitFor("the lease", func(m *Model) bool { return len(m.rows) == 1 })

	alter := func(allow bool) {
		_, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %v`, pgx.Identifier{db.Name}.Sanitize(), allow))
		if err != nil {
			t.Fatal(err)
		}
	}
	alter(false)
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` ALLOW_CONNECTIONS true`)
	})
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND application_name = 'leasetop listener'`, db.Name); err != nil {
		t.Fatal(err)
	}
	d.waitFor("RECONNECTING or DOWN", func(m *Model) bool {
		s := screen(m)
		return strings.Contains(s, "RECONNECTING") || strings.Contains(s, "DOWN")
	})
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "during"}, "1 min", "dev")
	if _, err := conn.Exec(ctx, `SELECT lease.force_release('acme', 'before', NULL, 'outage')`); err != nil {
		t.Fatal(err)
	}
	alter(true)
	d.waitScreen("● LIVE")
	want := dbRows(t, conn)
	d.waitFor("the state to equal the database", func(m *Model) bool { return sameRows(m.state, want) })
	d.waitScreen("acme/during")
	for i := range d.m.rows {
		if l, _ := d.m.rowLease(i); l.Session == "before" {
			t.Errorf("the lease released during the outage is still shown:\n%s", screen(d.m))
		}
	}
}

func dbRows(t *testing.T, conn *pgx.Conn) map[data.Key]uuid.UUID {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT account_id, session_id, run_id FROM lease.session_lease`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[data.Key]uuid.UUID{}
	for rows.Next() {
		var k data.Key
		var r uuid.UUID
		if err := rows.Scan(&k.Account, &k.Session, &r); err != nil {
			t.Fatal(err)
		}
		out[k] = r
	}
	return out
}

func sameRows(s *monitor.State, want map[data.Key]uuid.UUID) bool {
	if s.Len() != len(want) {
		return false
	}
	for k, r := range want {
		if l, ok := s.Lease(k); !ok || l.RunID != r {
			return false
		}
	}
	return true
}

// TestHostileRowFromTheDatabase: a row written past the constraints (a
// foreign table, a superuser's mistake) reaches the screen inert.
func TestHostileRowFromTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `ALTER DOMAIN lease.id_text DROP CONSTRAINT id_text_check;
		ALTER DOMAIN lease.holder_text DROP CONSTRAINT holder_text_check`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES ($1, $2, gen_random_uuid(), $3, 1,
		clock_timestamp(), clock_timestamp(), clock_timestamp() + interval '1 min')`,
		"evil\x1b[2J", "s\x1b]0;pwned\x07", "h\u009b31m\u202eabc"); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, db.Store(t), false, 100, 30)
	d.waitScreen(`evil\x1b[2J`)
	raw := sgrOnly.ReplaceAllString(d.m.View().Content, "")
	for _, r := range raw {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e') {
			t.Errorf("the view contains %U outside the monitor's own colour codes", r)
		}
	}
}

// TestReadOnlyMonitorAsReader: a lease_reader login sees everything and
// cannot release.
func TestReadOnlyMonitorAsReader(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	conn := db.Conn(t)
	reader := readerStore(t, db)
	k := data.Key{Account: "acme", Session: "watched"}
	sqlAcquire(t, conn, k, "1 min", "dev")
	d := liveModel(t, reader, true, 100, 30)
	d.waitScreen("watched")
	d.waitScreen("[RO]")
	d.press("x")
	if d.m.dialog != nil || !strings.Contains(d.m.status, "read-only mode") {
		t.Errorf("x in read-only: dialog %v status %q", d.m.dialog != nil, d.m.status)
	}
	d.press("enter")
	d.waitScreen("acquired") // the history, read with SELECT only
	if h := d.m.state.Health(time.Now()); h.Err != nil {
		t.Errorf("errors as lease_reader: %v", h.Err)
	}
}

// TestReleaseWithoutPrivilegeSaysWhy: a lease_reader that is not in
// read-only mode gets one clear line, and nothing is released.
func TestReleaseWithoutPrivilegeSaysWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	reader := readerStore(t, db)
	sqlAcquire(t, conn, data.Key{Account: "acme", Session: "guarded"}, "1 min", "dev")
	d := liveModel(t, reader, false, 100, 30)
	d.waitFor("the lease", func(m *Model) bool { return len(m.rows) == 1 })
	d.press("x", "y")
	d.waitFor("the refusal", func(m *Model) bool { return strings.Contains(m.status, "failed") })
	if !strings.Contains(d.m.status, "permission denied: forced release needs role lease_admin") {
		t.Errorf("status %q, want the missing role named", d.m.status)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&n); err != nil || n != 1 {
		t.Errorf("leases = %d (%v), want 1", n, err)
	}
}

// readerStore opens a store as a new login role that is only a
// lease_reader (SELECT on the lease schema).
func readerStore(t *testing.T, db pgtest.DB) *data.Store {
	t.Helper()
	reader, err := data.Open(context.Background(), db.ReaderURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	return reader
}

// TestDetailNamesTheBlockingTransaction: an expired lease whose row a
// fence-checked transaction keeps locked (its writer stuck or frozen) is
// not taken over; the detail view, even as a lease_reader, names that
// transaction's server process and how to end it.
func TestDetailNamesTheBlockingTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "stuck"}
	run := uuid.New() // the run's secret: the fence check needs it, not the public id
	if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '300 ms', 'frozen writer')`, k.Account, k.Session, run); err != nil {
		t.Fatal(err)
	}
	writer := db.Conn(t)
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var fence int64
	var pid int
	if err := conn.QueryRow(ctx, `SELECT fence FROM lease.session_lease`).Scan(&fence); err != nil {
		t.Fatal(err)
	}
	if err := data.CheckFence(ctx, tx, k, run, fence); err != nil {
		t.Fatalf("CheckFence: %v", err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitExpired(t, conn, k)

	d := liveModel(t, readerStore(t, db), true, 120, 30)
	d.waitScreen("stuck")
	d.press("enter")
	d.waitScreen(fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid))
	d.waitScreen("state hidden from this role")
	d.waitScreen("a transaction holds its row")
}

// TestReleaseOfTheNilRunReleasesNothing: the monitor's forced release
// compares the run it was given, whatever it is; the all-zero run id, which
// no run holds, never stands for "whoever holds it".
func TestReleaseOfTheNilRunReleasesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	k := data.Key{Account: "acme", Session: "held"}
	run := sqlAcquire(t, conn, k, "1 min", "device-1")
	res, err := forceRelease(ctx, db.Store(t), k, uuid.Nil, "nil run")
	if err != nil || res.Released || !res.Held || res.Now.RunID != run {
		t.Errorf("forceRelease(nil run) = %+v, %v; want nothing released and the lease still held by %v", res, err, run)
	}
	var held uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT run_id FROM lease.session_lease`).Scan(&held); err != nil || held != run {
		t.Errorf("lease now run %v (%v), want %v untouched", held, err, run)
	}
}
