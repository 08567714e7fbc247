package pgtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// HiddenTakeover is a lease_app login's takeover of an expired lease that it
// tries to hide from every consumer: its transaction opts
// out of the trigger's NOTIFY (as the library's does, which then notifies
// after the commit) and stays open until Commit.
type HiddenTakeover struct {
	ID   int64 // its event id: drawn, not committed
	Key  data.Key
	Run  uuid.UUID // the attacker's secret run id
	tx   pgx.Tx
	conn *pgx.Conn // a second session of the same login, for Forge
}

// OpenHiddenTakeover takes over k's expired lease as a new lease_app login of
// db, without committing. Nothing else may draw an event id meanwhile: the
// superuser reads the takeover's from the sequence.
func OpenHiddenTakeover(t testing.TB, db DB, k data.Key) *HiddenTakeover {
	t.Helper()
	ctx := context.Background()
	dsn, _ := Login(t, db, "lease_app")
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	h := &HiddenTakeover{Key: k, Run: uuid.New(), conn: connect()}
	tx, err := connect().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	h.tx = tx
	if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, '1 hour', 'attacker')`, k.Account, k.Session, h.Run); err != nil {
		t.Fatalf("takeover as lease_app: %v", err)
	}
	if err := db.Conn(t).QueryRow(ctx, `SELECT last_value FROM lease.event_id_seq`).Scan(&h.ID); err != nil {
		t.Fatal(err)
	}
	return h
}

// Forge sends, from the login's other session (delivered at once), the
// notification the takeover's commit would have sent.
func (h *HiddenTakeover) Forge(t testing.TB) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"id": h.ID, "at": time.Now(), "kind": data.KindTakenOver, "account_id": h.Key.Account,
		"session_id": h.Key.Session, "run_id": data.PublicRunID(h.Run), "holder": "attacker",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.Exec(context.Background(), `SELECT pg_notify('lease_events', $1)`, string(payload)); err != nil {
		t.Fatalf("forged notification as lease_app: %v", err)
	}
}

// Commit commits the takeover.
func (h *HiddenTakeover) Commit(t testing.TB) {
	t.Helper()
	if err := h.tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// BulkEvents commits n acquisitions of fresh keys in one statement as the
// superuser: n events, more than a consumer's window of 1000 when n > 1000.
func BulkEvents(t testing.TB, db DB, n int) {
	t.Helper()
	if _, err := db.Conn(t).Exec(context.Background(), `SELECT lease.acquire('bulk', 's' || g, gen_random_uuid(), '1 hour', 'bulk')
		FROM generate_series(1, $1) g`, n); err != nil {
		t.Fatal(err)
	}
}

// MarkerEvent acquires acme/session as the superuser and returns its event
// id. A silent one opts out of the trigger's NOTIFY and sends none: a
// listening consumer gets it only once its catch-up has read every row
// before it.
func MarkerEvent(t testing.TB, db DB, session string, silent bool) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := pgx.BeginFunc(ctx, db.Conn(t), func(tx pgx.Tx) error {
		if silent {
			if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `SELECT lease.acquire('acme', $1, gen_random_uuid(), '1 hour', 'marker')`, session); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT max(id) FROM lease.event WHERE session_id = $1`, session).Scan(&id)
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}
