package data_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// seedLeases writes rows straight into lease.session_lease, triggers off.
func seedLeases(t *testing.T, db pgtest.DB, insert string) {
	t.Helper()
	conn := db.Conn(t)
	for _, q := range []string{`SET session_replication_role = replica`, insert, `RESET session_replication_role`} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
}

// TestSnapshotRawMatchesScan: the snapshot's raw decoding of lease rows
// (rawlease.go) gives what rows.Scan gives (Store.Lease reads each key with
// it), for values at the edges: a NULL and a non-ASCII attachment, times
// before 2000 and with microseconds, the largest fence, a lease that may
// not be preempted, the empty holder.
func TestSnapshotRawMatchesScan(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		seedLeases(t, db, `INSERT INTO lease.session_lease
			(account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at, preemptible, attachment)
			VALUES ('acct-é', 's1', gen_random_uuid(), 'host-ü', 1,
			        '1999-12-31 23:59:59.999999+00', '1970-01-01 00:00:00.000001+00', '2000-01-01 00:00:00+00', true, NULL),
			       ('acct-é', 's2', gen_random_uuid(), '', 9223372036854775807,
			        '1969-07-20 20:17:40.5+00', now(), now() + interval '1 hour', false, 'attachment ✓'),
			       ('b', 's3', '00000000-0000-0000-0000-000000000000', 'h', 0,
			        '2038-01-19 03:14:08.123456+00', '2100-02-28 12:00:00+05', '2100-03-01 00:00:00-08', true, '')`)
		snap, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Leases) != 3 {
			t.Fatalf("Snapshot: %d leases, want 3", len(snap.Leases))
		}
		for _, got := range snap.Leases {
			want, _, ok, err := s.Lease(ctx, got.Key)
			if err != nil || !ok {
				t.Fatalf("Lease(%v) = %v, %v", got.Key, ok, err)
			}
			if got != want {
				t.Errorf("Snapshot's lease %v:\n got %+v\nwant %+v (rows.Scan's)", got.Key, got, want)
			}
		}
	})
}

// TestReadSyncAllocations bounds what reading a lease costs the heap: one
// allocation (its session text) and about its own size, not the dozen
// allocations and the repeated copies of a growing slice that made the
// first read of 1,000,000 leases cost seconds.
func TestReadSyncAllocations(t *testing.T) {
	t.Parallel()
	const n = 20_000
	db := pgtest.New(t)
	seedLeases(t, db, `INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		SELECT 'acct-' || (g % 100), 'sess-' || g, gen_random_uuid(), 'device-' || (g % 50), g,
		       now() - interval '1 hour', now() - interval '10 minutes', now() + interval '1 hour'
		  FROM generate_series(1, 20000) g`)
	if _, err := db.Conn(t).Exec(context.Background(), `ANALYZE lease.session_lease`); err != nil {
		t.Fatal(err)
	}
	s := db.Store(t)
	ctx := context.Background()
	if _, err := s.ReadSync(ctx, data.SyncQuery{After: -1}); err != nil { // warm the pool and the statement cache
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sync, err := s.ReadSync(ctx, data.SyncQuery{After: -1})
	runtime.ReadMemStats(&after)
	if err != nil || len(sync.Leases) != n {
		t.Fatalf("ReadSync = %d leases, %v; want %d", len(sync.Leases), err, n)
	}
	allocs := float64(after.Mallocs-before.Mallocs) / n
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("per lease: %.2f allocations, %.0f bytes", allocs, bytes)
	if allocs > 2 {
		t.Errorf("%.2f allocations a lease, want at most 2", allocs)
	}
	if bytes > 260 {
		t.Errorf("%.0f bytes allocated a lease, want at most 260 (a data.Lease is about 170)", bytes)
	}
}

// TestReadSyncEach: with SyncQuery.Each the read hands over every lease as
// it arrives, the same leases a read without it returns, and keeps none.
func TestReadSyncEach(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	seedLeases(t, db, `INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		SELECT 'acct-' || (g % 7), 'sess-' || g, gen_random_uuid(), 'device-' || (g % 3), g, now(), now(), now() + interval '1 hour'
		  FROM generate_series(1, 1000) g`)
	s := db.Store(t)
	ctx := context.Background()
	whole, err := s.ReadSync(ctx, data.SyncQuery{After: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[data.Key]data.Lease{}
	streamed, err := s.ReadSync(ctx, data.SyncQuery{After: -1, Each: func(l data.Lease) { got[l.Key] = l }})
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed.Leases) != 0 || streamed.Clock.IsZero() {
		t.Errorf("ReadSync with Each kept %d leases (want 0), clock %v (want measured)", len(streamed.Leases), streamed.Clock)
	}
	if len(got) != len(whole.Leases) || len(got) != 1000 {
		t.Fatalf("Each got %d leases, ReadSync returns %d, want 1000", len(got), len(whole.Leases))
	}
	for _, want := range whole.Leases {
		if got[want.Key] != want {
			t.Errorf("Each got %+v for %v, want %+v", got[want.Key], want.Key, want)
		}
	}
}
