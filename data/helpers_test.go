package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
)

// waitServerPast polls the database clock until it is past t: the condition
// an expiry test waits for, instead of sleeping.
func waitServerPast(t *testing.T, conn *pgx.Conn, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var past bool
		if err := conn.QueryRow(context.Background(), `SELECT clock_timestamp() > $1`, at).Scan(&past); err != nil {
			t.Fatalf("read server clock: %v", err)
		}
		if past {
			return
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	t.Fatalf("server clock never passed %v", at)
}

// mustAcquire acquires or fails the test.
func mustAcquire(t *testing.T, s *data.Store, k data.Key, run uuid.UUID, ttl time.Duration) data.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), k, run, ttl, "holder "+run.String()[:8])
	if err != nil {
		t.Fatalf("Acquire(%v) err = %v, want nil", k, err)
	}
	return g
}

// events returns every event row, oldest first.
func events(t *testing.T, s *data.Store) []data.Event {
	t.Helper()
	evs, err := s.EventsSince(context.Background(), 0, 100000)
	if err != nil {
		t.Fatalf("EventsSince: %v", err)
	}
	return evs
}

// kinds returns the kinds of evs.
func kinds(evs []data.Event) []data.Kind {
	out := make([]data.Kind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// rowCount returns the number of leases for k (0 or 1).
func leaseOf(t *testing.T, conn *pgx.Conn, k data.Key) (run uuid.UUID, fence int64, ok bool) {
	t.Helper()
	err := conn.QueryRow(context.Background(),
		`SELECT run_id, fence FROM lease.session_lease WHERE account_id = $1 AND session_id = $2`,
		k.Account, k.Session).Scan(&run, &fence)
	if err == pgx.ErrNoRows {
		return uuid.Nil, 0, false
	}
	if err != nil {
		t.Fatalf("read lease: %v", err)
	}
	return run, fence, true
}
