package data_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestCallerOptOutIsTransactionLocal: the trigger skips its NOTIFY only
// for a transaction that set lease.caller_notifies to its own start time. A
// session-level value (left by another client on a pooled connection, or set
// at connect) and any other value leave it notifying; the event row is
// written either way.
func TestCallerOptOutIsTransactionLocal(t *testing.T) {
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
