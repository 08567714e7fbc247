package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/leaserow"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The contract docs/sql.md states: fences rise per key with gaps, because a
// takeover attempt draws a value before it knows whether it wins. Here one
// waits behind a row lock, loses (the lease is no longer expired when the
// lock is gone), and its value is never used; the next owner's fence is
// higher than the first's, but not the next number.
func TestFenceGapsFromALosingTakeover(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	s := db.Store(t)
	k := data.Key{Account: "acct", Session: "gaps"}
	first := mustAcquire(t, s, k, uuid.New(), time.Minute)
	if _, err := leaserow.ExpireNow(ctx, s.Pool(), k); err != nil {
		t.Fatal(err)
	}

	tx, err := db.Conn(t).Begin(ctx) // holds the row while a takeover waits
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if ok, err := leaserow.Lock(ctx, tx, k); err != nil || !ok {
		t.Fatalf("leaserow.Lock = %v, %v", ok, err)
	}
	lost := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "loser")
		lost <- err
	}()
	pool := db.Pool(t)
	pgtest.Eventually(t, 10*time.Second, "the takeover to wait for the row", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%lease.acquire%'`).Scan(&n)
		return err == nil && n == 1
	})
	// The holder renews meanwhile (here: the row's expiry moves on), so the
	// waiting takeover finds an unexpired lease and takes nothing.
	if _, err := tx.Exec(ctx, `UPDATE lease.session_lease SET expires_at = clock_timestamp() + interval '1 minute'
		WHERE account_id = $1 AND session_id = $2`, k.Account, k.Session); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-lost; !errors.Is(err, data.ErrHeld) {
		t.Fatalf("the waiting takeover err = %v, want ErrHeld (it lost)", err)
	}

	if _, err := leaserow.ExpireNow(ctx, s.Pool(), k); err != nil {
		t.Fatal(err)
	}
	next := mustAcquire(t, s, k, uuid.New(), time.Minute)
	if next.Fence <= first.Fence+1 {
		t.Errorf("fence after the lost takeover = %d, want > %d: the loser drew %d and never used it (the documented gap)",
			next.Fence, first.Fence+1, first.Fence+1)
	}
}
