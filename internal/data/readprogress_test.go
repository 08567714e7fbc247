package data_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestReadProgress: the reads of many rows that the monitor's feed makes
// besides a resync (renewals since a time, leases by key, events by id)
// call a context's WithReadProgress function as the rows arrive, so the
// feed cuts one off only when it receives nothing (an idle timeout), not
// after a fixed total time.
func TestReadProgress(t *testing.T) {
	t.Parallel()
	const n = 1000
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := db.Conn(t).Exec(ctx, `
		INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		SELECT 'acct', 'sess-' || g, gen_random_uuid(), 'dev', g, now(), now(), now() + interval '1 hour'
		  FROM generate_series(1, $1::int) g`, n); err != nil {
		t.Fatalf("seed: %v", err)
	}
	keys := make([]data.Key, n)
	for i := range keys {
		keys[i] = data.Key{Account: "acct", Session: fmt.Sprintf("sess-%d", i+1)}
	}
	var ids []int64
	if err := db.Conn(t).QueryRow(ctx, `SELECT coalesce(array_agg(id), '{}') FROM lease.event`).Scan(&ids); err != nil {
		t.Fatalf("read the event ids: %v", err)
	}
	reads := []struct {
		name string
		rows int
		read func(context.Context) error
	}{
		{"Changed", n, func(ctx context.Context) error {
			_, err := s.Changed(ctx, time.Now().Add(-time.Hour))
			return err
		}},
		{"LeasesFor", n, func(ctx context.Context) error {
			_, err := s.LeasesFor(ctx, keys)
			return err
		}},
		{"EventsByID", len(ids), func(ctx context.Context) error {
			_, err := s.EventsByID(ctx, ids)
			return err
		}},
	}
	for _, r := range reads {
		calls := 0
		if err := r.read(data.WithReadProgress(ctx, func() { calls++ })); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if want := r.rows / 256; calls < want || want == 0 {
			t.Errorf("%s of %d rows called progress %d times, want at least %d (and rows to read)", r.name, r.rows, calls, want)
		}
	}
}
