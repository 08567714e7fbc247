package data_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/sqlcall"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNotifyPendingSendsOnlyTheCallsOwnEvent: the library's notification
// after an acquire's commit (sqlcall.NotifyPending) sends the payload the
// trigger kept for that call, once, and nothing for anything else: another
// key or run, a refused acquire, a call rolled back, a second time, or a
// session that made no call (a transaction pooler that ran the notifying
// transaction on another server connection).
func TestNotifyPendingSendsOnlyTheCallsOwnEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn, other := db.Conn(t), db.Conn(t)
	drain := collect(t, db.Conn(t), db.Conn(t))
	run := uuid.New()
	pub := data.PublicRunID(run)
	acquire := func(tx pgx.Tx, session string, r uuid.UUID) {
		t.Helper()
		if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('acme', $1, $2, '1 minute', 'h')`, session, r); err != nil {
			t.Fatalf("acquire %s: %v", session, err)
		}
	}
	notify := func(c *pgx.Conn, session string, pub uuid.UUID) bool {
		t.Helper()
		tag, err := c.Exec(ctx, sqlcall.NotifyPending, "acme", session, pub)
		if err != nil {
			t.Fatalf("the notification statement: %v", err)
		}
		return tag.RowsAffected() == 1
	}

	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { acquire(tx, "one", run); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("the opted-out acquire notified in its commit: %q", got)
	}
	for name, c := range map[string]struct {
		conn    *pgx.Conn
		session string
		pub     uuid.UUID
	}{
		"another session":    {conn, "two", pub},
		"another run":        {conn, "one", uuid.New()},
		"another connection": {other, "one", pub},
	} {
		if notify(c.conn, c.session, c.pub) {
			t.Errorf("%s: the notification statement sent the payload", name)
		}
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("notifications %q of payloads that were not the caller's", got)
	}
	if !notify(conn, "one", pub) {
		t.Fatal("the notification statement found no payload for the call's own event")
	}
	got := drain()
	var ev struct {
		Kind    string `json:"kind"`
		Session string `json:"session_id"`
		RunID   string `json:"run_id"`
	}
	if len(got) != 1 || json.Unmarshal([]byte(got[0]), &ev) != nil || ev.Kind != "acquired" || ev.Session != "one" || ev.RunID != pub.String() {
		t.Fatalf("the notification statement sent %q, want the acquired event of acme/one by %v", got, pub)
	}
	if notify(conn, "one", pub) {
		t.Error("the notification statement sent the same payload twice")
	}

	// A refused acquire (another run holds the key) wrote no event, and a
	// rolled-back one's payload went with its transaction.
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { acquire(tx, "one", uuid.New()); return nil }); err != nil {
		t.Fatal(err)
	}
	rolledBack := uuid.New()
	errBack := errors.New("roll back")
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { acquire(tx, "three", rolledBack); return errBack }); !errors.Is(err, errBack) {
		t.Fatal(err)
	}
	if notify(conn, "one", pub) || notify(conn, "three", data.PublicRunID(rolledBack)) {
		t.Error("the notification statement sent a payload after a refused or rolled-back acquire")
	}
	if got := drain(); len(got) != 0 {
		t.Errorf("notifications %q after a refused and a rolled-back acquire", got)
	}
}
