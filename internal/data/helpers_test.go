package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// eachConnection runs tc twice, each time on a fresh database db: subtest
// "direct" with a store connected to PostgreSQL itself, and "pooler" with a
// store through a real PgBouncer in transaction mode (started for the
// subtest, two server connections, so consecutive calls may run on
// different ones), as in TestEveryCallThroughPooler. The store's calls go
// where the subtest says; what tc reads with db.Conn or db.Pool goes to the
// server directly.
func eachConnection(t *testing.T, tc func(t *testing.T, db pgtest.DB, s *data.Store)) {
	t.Helper()
	t.Run("direct", func(t *testing.T) {
		db := pgtest.New(t)
		tc(t, db, db.Store(t))
	})
	t.Run("pooler", func(t *testing.T) {
		db := pgtest.New(t)
		s := pgtest.OpenStore(t, db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2})), data.Options{})
		if !data.Pooled(s) {
			t.Fatal("store through PgBouncer: Pooled = false, want true")
		}
		tc(t, db, s)
	})
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
