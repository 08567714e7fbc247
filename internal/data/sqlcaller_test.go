package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// psqlConn connects as a new lease_app login the way psql talks: the simple
// query protocol, every statement its own transaction (autocommit).
func psqlConn(t *testing.T, db pgtest.DB) *pgx.Conn {
	t.Helper()
	dsn, _ := pgtest.Login(t, db, "lease_app")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestSQLCallerNotifiesAfterCommit runs docs/sql.md's psql example for SQL
// callers: acquire_quiet and release_quiet commit without a notification,
// and lease.notify_event sends the trigger's payload of the event they
// return, once, after the commit.
func TestSQLCallerNotifiesAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app, reader := psqlConn(t, db), db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	run := uuid.New()

	// The example, statement by statement, as psql sends it.
	var fence int64
	var eventID *int64
	if err := app.QueryRow(ctx, fmt.Sprintf(
		`SELECT fence, event_id FROM lease.acquire_quiet('acme', 'chat-1', '%s', '30 seconds', 'worker 7')`, run)).
		Scan(&fence, &eventID); err != nil {
		t.Fatalf("acquire_quiet: %v", err)
	}
	if eventID == nil {
		t.Fatal("acquire_quiet of a free key: event_id NULL, want the acquired event's id")
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("acquire_quiet's commit notified %q, want nothing", got)
	}
	notifyOnce(t, app, reader, drain, *eventID, data.KindAcquired, run)

	// A retry by the holder writes no event and has none to notify; a
	// contended call gets no row.
	if err := app.QueryRow(ctx, fmt.Sprintf(
		`SELECT event_id FROM lease.acquire_quiet('acme', 'chat-1', '%s', '30 seconds', 'worker 7')`, run)).
		Scan(&eventID); err != nil || eventID != nil {
		t.Fatalf("the holder's retry: event_id %v, err %v; want NULL, nil", eventID, err)
	}
	rows, err := app.Query(ctx, fmt.Sprintf(
		`SELECT * FROM lease.acquire_quiet('acme', 'chat-1', '%s', '30 seconds', 'worker 8')`, uuid.New()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Close(); rows.Err() != nil || n != 0 {
		t.Fatalf("contended acquire_quiet: %d rows, err %v; want 0 rows", n, rows.Err())
	}

	if err := app.QueryRow(ctx, fmt.Sprintf(`SELECT lease.release_quiet('acme', 'chat-1', '%s')`, run)).Scan(&eventID); err != nil || eventID == nil {
		t.Fatalf("release_quiet: event_id %v, err %v; want the released event's id", eventID, err)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("release_quiet's commit notified %q, want nothing", got)
	}
	notifyOnce(t, app, reader, drain, *eventID, data.KindReleased, run)
	if err := app.QueryRow(ctx, fmt.Sprintf(`SELECT lease.release_quiet('acme', 'chat-1', '%s')`, run)).Scan(&eventID); err != nil || eventID != nil {
		t.Fatalf("second release_quiet: event_id %v, err %v; want NULL, nil", eventID, err)
	}

	var sent *bool
	for _, q := range []string{`SELECT lease.notify_event(NULL)`, `SELECT lease.notify_event(-1)`} {
		if err := app.QueryRow(ctx, q).Scan(&sent); err != nil || (sent != nil && *sent) {
			t.Fatalf("%s = %v, err %v; want NULL or false", q, sent, err)
		}
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("notify_event of no event notified %q, want nothing", got)
	}
}

// notifyOnce sends event id's notification as the SQL caller and checks
// that exactly its row's payload arrived.
func notifyOnce(t *testing.T, app, reader *pgx.Conn, drain func() []string, id int64, kind data.Kind, run uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	var sent bool
	if err := app.QueryRow(ctx, fmt.Sprintf(`SELECT lease.notify_event(%d)`, id)).Scan(&sent); err != nil || !sent {
		t.Fatalf("notify_event(%d) = %t, %v; want true", id, sent, err)
	}
	got := drain()
	if len(got) != 1 {
		t.Fatalf("after notify_event(%d): %d notifications %q, want 1", id, len(got), got)
	}
	var want string
	if err := reader.QueryRow(ctx, `SELECT lease.event_json(e) FROM lease.event e WHERE id = $1`, id).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got[0] != want {
		t.Errorf("payload %s, want the trigger's %s", got[0], want)
	}
	var p struct {
		Kind  data.Kind `json:"kind"`
		RunID uuid.UUID `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(got[0]), &p); err != nil || p.Kind != kind || p.RunID != data.PublicRunID(run) {
		t.Errorf("payload %s: kind %s run %s (err %v), want %s by %s", got[0], p.Kind, p.RunID, err, kind, data.PublicRunID(run))
	}
}

// TestQuietCallLeavesTheRestOfItsTransactionNotifying: the opt-out of
// acquire_quiet covers its own transition only; a plain lease.acquire later
// in the same transaction still notifies in its commit.
func TestQuietCallLeavesTheRestOfItsTransactionNotifying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	app := psqlConn(t, db)
	drain := collect(t, db.Conn(t), db.Conn(t))
	for _, q := range []string{
		`BEGIN`,
		fmt.Sprintf(`SELECT FROM lease.acquire_quiet('acme', 'quiet', '%s', '1 minute', '')`, uuid.New()),
		fmt.Sprintf(`SELECT FROM lease.acquire('acme', 'plain', '%s', '1 minute', '')`, uuid.New()),
		`COMMIT`,
	} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	got := drain()
	if len(got) != 1 {
		t.Fatalf("%d notifications %q, want 1 (the plain acquire's)", len(got), got)
	}
	var p struct {
		Session string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(got[0]), &p); err != nil || p.Session != "plain" {
		t.Errorf("notification %s, want the plain acquire's (session plain)", got[0])
	}
}
