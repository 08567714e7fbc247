package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
)

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
