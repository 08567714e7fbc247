package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

// Nobody is a connection to a test database as a new login with no lease
// right at all, only what PUBLIC has (CONNECT): enough to NOTIFY on any
// channel. It is closed when the test ends.
type Nobody struct{ conn *pgx.Conn }

// ConnectNobody logs in to db as a new role with CONNECT only.
func ConnectNobody(t testing.TB, db DB) *Nobody {
	t.Helper()
	ctx := context.Background()
	dsn, role := Login(t, db, "")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &Nobody{conn: conn}
}

// Notify sends every payload on lease_events in one transaction. NOTIFY
// folds identical payloads of one transaction into one: make them differ
// (Replays does).
func (n *Nobody) Notify(t testing.TB, payloads []string) {
	t.Helper()
	if _, err := n.conn.Exec(context.Background(), `SELECT pg_notify($1, p) FROM unnest($2::text[]) p`, data.Channel, payloads); err != nil {
		t.Fatalf("NOTIFY as a CONNECT-only role: %v", err)
	}
}

// Replays returns the notification payloads of evs (as lease.event_json
// writes them), rounds times over, each copy told apart by its reason:
// what someone who heard them once would send again.
func Replays(t testing.TB, evs []data.Event, rounds int) []string {
	t.Helper()
	var out []string
	for round := range rounds {
		for _, ev := range evs {
			ev.Reason = fmt.Sprintf("replay %d", round)
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return out
}

// History returns every event of lease.event, oldest first: what a test
// sends again.
func History(t testing.TB, s *data.Store) []data.Event {
	t.Helper()
	var evs []data.Event
	for ev, err := range s.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}
