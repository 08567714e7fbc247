package data_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCallerOptOutIsTransactionLocal: the trigger skips its NOTIFY only
// for a transaction that set lease.caller_notifies to its own start time. A
// session-level value (left by another client on a pooled connection, or set
// at connect) and any other value leave it notifying; the event row is
// written either way.
func TestCallerOptOutIsTransactionLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	acquire := func(tx pgx.Tx, session string) {
		t.Helper()
		if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('a', $1, gen_random_uuid(), '1 minute', '')`, session); err != nil {
			t.Fatalf("acquire %s: %v", session, err)
		}
	}
	tests := []struct {
		name    string
		setup   string // run in the acquire's transaction, before it
		notices int
	}{
		{"opted out, transaction-local", `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`, 0},
		{"another value", `SELECT set_config('lease.caller_notifies', 'off', true)`, 1},
		{"no setting", `SELECT 1`, 1},
	}
	for _, tt := range tests {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, tt.setup); err != nil {
				return err
			}
			acquire(tx, tt.name)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(); len(got) != tt.notices {
			t.Errorf("%s: %d notifications %q, want %d", tt.name, len(got), got, tt.notices)
		}
	}

	// A session-level value, set with the value that opted out its own
	// transaction, opts out no later one.
	if _, err := conn.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, false)`); err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { acquire(tx, "session-level"); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 1 {
		t.Errorf("after a session-level opt-out: %d notifications, want 1", len(got))
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'acquired'`).Scan(&n); err != nil || n != 4 {
		t.Errorf("acquired events = %d (%v), want 4: an opt-out never skips the row", n, err)
	}
}

// TestLibraryNotifiesAfterItsCommit stops the store between an acquire's
// (and a release's) commit and its notification: the transition is
// committed and nobody has been notified. Then it sends exactly one
// notification, the trigger's payload for that row, byte for byte.
func TestLibraryNotifiesAfterItsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, other := db.Store(t), db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	k := data.Key{Account: "a", Session: "s"}
	run := uuid.New()

	var inWindow []string
	var committed bool
	data.SetAfterCommit(s, func() {
		inWindow = drain()
		_, _, committed = leaseOf(t, other, k)
	})
	mustAcquire(t, s, k, run, time.Minute)
	if !committed || len(inWindow) != 0 {
		t.Fatalf("between the acquire's commit and its notification: committed %v, notifications %q; want committed, none", committed, inWindow)
	}
	checkOneNotification(t, other, drain(), data.KindAcquired)

	data.SetAfterCommit(s, func() {
		inWindow = drain()
		_, _, held := leaseOf(t, other, k)
		committed = !held
	})
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v; want released", ok, err)
	}
	if !committed || len(inWindow) != 0 {
		t.Fatalf("between the release's commit and its notification: committed %v, notifications %q; want committed, none", committed, inWindow)
	}
	checkOneNotification(t, other, drain(), data.KindReleased)
}

// checkOneNotification checks that got is one notification, of the newest
// event, which is of kind want, and equal to lease.event_json of its row.
func checkOneNotification(t *testing.T, conn *pgx.Conn, got []string, want data.Kind) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d notifications %q, want 1", len(got), got)
	}
	var payload string
	var kind data.Kind
	if err := conn.QueryRow(context.Background(),
		`SELECT lease.event_json(e), e.kind FROM lease.event e ORDER BY id DESC LIMIT 1`).Scan(&payload, &kind); err != nil {
		t.Fatal(err)
	}
	if kind != want || got[0] != payload {
		t.Errorf("notification %q, want the %s event's lease.event_json %q", got[0], want, payload)
	}
}

// TestNotificationRefusedFallsBackToTheTrigger: a role that may call the
// functions but not read lease.event cannot send its own notification. Its
// first transition goes unnotified (a listener's catch-up delivers it);
// from then on its store calls plainly and the trigger notifies.
func TestNotificationRefusedFallsBackToTheTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dsn, role := pgtest.Login(t, db, "")
	r := pgx.Identifier{role}.Sanitize()
	for _, grant := range []string{
		`GRANT USAGE ON SCHEMA lease TO ` + r,
		`GRANT SELECT ON lease.schema_version TO ` + r,
		`GRANT EXECUTE ON FUNCTION lease.acquire(text, text, uuid, interval, text), lease.release(text, text, uuid) TO ` + r,
	} {
		if _, err := db.Conn(t).Exec(ctx, grant); err != nil {
			t.Fatal(err)
		}
	}
	s := pgtest.OpenStore(t, dsn, data.Options{})
	drain := collect(t, db.Conn(t), db.Conn(t))
	k := data.Key{Account: "a", Session: "s"}
	first, second := uuid.New(), uuid.New()
	mustAcquire(t, s, k, first, time.Minute)
	if got := drain(); len(got) != 0 {
		t.Fatalf("first acquire: notifications %q, want none (its notification was refused)", got)
	}
	if ok, err := s.Release(ctx, k, first); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	mustAcquire(t, s, k, second, time.Minute)
	if got := drain(); len(got) != 2 {
		t.Fatalf("release and second acquire: %d notifications %q, want 2 from the trigger", len(got), got)
	}
}

// TestRefusedCallKeepsTheConnection: a call the server refuses ends its
// pipeline cleanly; the same pooled connection serves the next call.
func TestRefusedCallKeepsTheConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dsn, _ := pgtest.Login(t, db, "lease_reader")
	s := pgtest.OpenStore(t, withParam(dsn, "pool_max_conns=1"), data.Options{})
	k := data.Key{Account: "a", Session: "s"}
	for i := range 3 {
		if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, ""); !errors.Is(err, data.ErrPermission) {
			t.Fatalf("Acquire %d as lease_reader: err = %v, want ErrPermission", i, err)
		}
	}
	if _, err := s.Release(ctx, k, uuid.New()); !errors.Is(err, data.ErrPermission) {
		t.Fatalf("Release as lease_reader: err = %v, want ErrPermission", err)
	}
}

// TestSimpleProtocolKeepsTheSecretOutOfQueryText: a connection string that
// asks for the simple protocol, which writes arguments into the query text,
// still sends every call that carries the run's secret id (acquire, renew,
// the fence check, release) as bind parameters: another program logged in
// as the same role reads pg_stat_activity.query after each call, and never
// finds the secret there. Before, the renewal showed it, and that program
// released the lease with it. The acquire is still notified.
func TestSimpleProtocolKeepsTheSecretOutOfQueryText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	dsn, _ := pgtest.Login(t, db, "lease_app")
	s := pgtest.OpenStore(t, withParam(dsn, "default_query_exec_mode=simple_protocol"), data.Options{})
	spy, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close(ctx)
	drain := collect(t, db.Conn(t), db.Conn(t))
	k, run := data.Key{Account: "a", Session: "s"}, uuid.New()
	look := func(after string) {
		t.Helper()
		rows, err := spy.Query(ctx, `SELECT query FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(texts) == 0 {
			t.Fatalf("after %s: the spy sees no session of its login", after)
		}
		for _, q := range texts {
			if strings.Contains(q, run.String()) {
				t.Errorf("after %s, pg_stat_activity.query shows the secret run id: %q", after, q)
			}
		}
	}
	g := mustAcquire(t, s, k, run, time.Minute)
	look("acquire")
	checkOneNotification(t, db.Conn(t), drain(), data.KindAcquired)
	if _, err := s.Renew(ctx, k, run, time.Minute); err != nil {
		t.Fatal(err)
	}
	look("renew")
	if err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		if err := data.CheckFence(ctx, tx, k, run, g.Fence); err != nil {
			return err
		}
		look("check_fence") // before COMMIT becomes the session's last query
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	look("release")
}

// withParam adds a query parameter to a URL connection string.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}
