package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestEveryCallThroughPooler runs every Store call, a fence-checked write
// and the migration through a real PgBouncer in transaction mode with two
// server connections shared by three clients, so each client's statements
// land on connections the others prepared theirs on. With pgx's default
// query mode the second client already fails (42P05); Open finds the pooler
// and uses one that keeps no statement past its transaction.
func TestEveryCallThroughPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	if data.Pooled(db.Store(t)) {
		t.Fatal("a direct store reports Pooled, want not")
	}
	stores := make([]*data.Store, 3)
	for i := range stores {
		stores[i] = pgtest.OpenStore(t, via, data.Options{})
		if !data.Pooled(stores[i]) {
			t.Fatalf("store %d through PgBouncer: Pooled = false, want true", i)
		}
	}
	for round := range 10 {
		for i, s := range stores {
			k := data.Key{Account: "pooled", Session: fmt.Sprintf("s%d", i)}
			if err := everyCall(ctx, s, k); err != nil {
				t.Fatalf("round %d, client %d: %v", round, i, err)
			}
		}
	}
	for i := range 2 {
		cfg, err := data.ParseConnConfig(via)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := data.Connect(ctx, cfg)
		if err != nil {
			t.Fatalf("Connect through PgBouncer: %v", err)
		}
		err = data.Migrate(ctx, conn)
		conn.Close(ctx)
		if err != nil {
			t.Fatalf("migrate %d through PgBouncer: %v", i, err)
		}
	}
}

// everyCall makes each of a Store's calls once on k.
func everyCall(ctx context.Context, s *data.Store, k data.Key) error {
	run := uuid.New()
	g, err := s.Acquire(ctx, k, run, time.Minute, "pooled")
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "other"); !errors.Is(err, data.ErrHeld) {
		return fmt.Errorf("contended acquire err = %v, want ErrHeld", err)
	}
	if _, err := s.Renew(ctx, k, run, time.Minute); err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	if got, err := s.RenewMany(ctx, time.Minute, []data.RenewItem{{Key: k, RunID: run}, {Key: k, RunID: uuid.New()}}); err != nil ||
		got[0].Err != nil || !errors.Is(got[1].Err, data.ErrNotHeld) {
		return fmt.Errorf("renew many = %+v, %w; want the run's renewed and the stranger's ErrNotHeld", got, err)
	}
	if err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
		return data.CheckFence(ctx, tx, k, run, g.Fence)
	}); err != nil {
		return fmt.Errorf("check fence: %w", err)
	}
	reads := []func() error{
		func() error { _, _, _, err := s.Lease(ctx, k); return err },
		func() error { _, err := s.Snapshot(ctx); return err },
		func() error { _, err := s.Changed(ctx, time.Now().Add(-time.Hour)); return err },
		func() error { _, err := s.ReadSync(ctx, data.SyncQuery{After: -1, Tail: 100}); return err },
		func() error { _, err := s.EventsSince(ctx, 0, 10); return err },
		func() error { _, err := s.EventsFor(ctx, k, 10); return err },
		func() error { _, err := s.EventsByID(ctx, []int64{1, 2}); return err },
		func() error { _, err := s.LeasesFor(ctx, []data.Key{k}); return err },
		func() error { _, err := s.LastEventID(ctx); return err },
		func() error { _, err := s.NotifyRenewals(ctx); return err },
		func() error { return s.CheckSchema(ctx) },
	}
	for i, read := range reads {
		if err := read(); err != nil {
			return fmt.Errorf("read %d: %w", i, err)
		}
	}
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		return fmt.Errorf("release = %v, %w", ok, err)
	}
	if _, err := s.Acquire(ctx, k, run, time.Minute, "pooled"); err != nil {
		return fmt.Errorf("acquire again: %w", err)
	}
	if ok, err := s.ForceReleaseAny(ctx, k, "through the pooler"); err != nil || !ok {
		return fmt.Errorf("force release = %v, %w", ok, err)
	}
	return nil
}

// TestSimultaneousAcquireThroughPooler is TestSimultaneousAcquire through
// PgBouncer: 16 independent clients race for one key, and every round has
// exactly one winner.
func TestSimultaneousAcquireThroughPooler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 16}))
	stores := make([]*data.Store, 16)
	for i := range stores {
		stores[i] = pgtest.OpenStore(t, via, data.Options{})
	}
	raceOneKey(t, stores, db.Conn(t), 100)
}

// TestPoolerErrors: what a pooler refuses comes back as one line that says
// what to change, and the retry predicates know a configuration problem
// from a limit reached.
func TestPoolerErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 1}))
	limited := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 1,
		Settings: map[string]string{"max_client_conn": "2", "query_wait_timeout": "1"}}))

	// A transaction holds the limited pooler's one server connection, so the
	// next client's query waits for it in vain; a third client is one too many.
	holder, err := pgx.Connect(ctx, limited)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}

	// A prepared statement PostgreSQL itself says does not exist, as a
	// pooler makes it say to describe_exec's second round trip.
	direct := db.Conn(t)
	_, missing := direct.Exec(ctx, `EXECUTE leasetop_never_prepared`)

	tests := []struct {
		name      string
		err       func() error
		fix       string
		permanent bool
		connect   bool // also a *ConnectError
	}{
		{"statement cache through a transaction pooler", func() error {
			pgtest.OpenStore(t, via+"&default_query_exec_mode=cache_statement", data.Options{})
			_, err := data.Open(ctx, via+"&default_query_exec_mode=cache_statement")
			return err
		}, "set default_query_exec_mode=cache_describe", true, false},
		{"prepared statement missing", func() error { return data.Translate(missing) },
			"set default_query_exec_mode=cache_describe", true, false},
		{"startup parameter the pooler refuses", func() error {
			_, err := data.Open(ctx, via+"&search_path=public")
			return err
		}, "remove it from the connection string", true, true},
		{"no server connection in time", func() error {
			_, err := data.Open(ctx, limited)
			return err
		}, "raise its default_pool_size", false, false},
		{"client limit", func() error {
			second, err := pgx.Connect(ctx, limited)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close(ctx)
			_, err = data.Open(ctx, limited)
			return err
		}, "raise its max_client_conn", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var pe *data.PoolerError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.fix) {
				t.Fatalf("err = %v, want a *PoolerError that says %q", err, tc.fix)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line", err)
			}
			if got := data.Permanent(err); got != tc.permanent {
				t.Errorf("Permanent(%v) = %v, want %v", err, got, tc.permanent)
			}
			var ce *data.ConnectError
			if got := errors.As(err, &ce); got != tc.connect {
				t.Errorf("err = %v is a *ConnectError: %v, want %v", err, got, tc.connect)
			}
		})
	}
}
