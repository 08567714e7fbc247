package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestAdvisoryLockCannotBlockAKey logs in as a role with no lease grant at
// all (CONNECT only) and takes the advisory lock that schema version 1's
// acquire took for the key, then keeps it: acquire must not wait on anything
// such a role can hold. An acquire that took that lock would wait for
// lock_timeout (5 s) and fail.
func TestAdvisoryLockCannotBlockAKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	attacker, login := connectAs(t, db, "")
	if _, err := attacker.Exec(ctx, `SELECT pg_advisory_lock(1818583411, hashtext('acme/victim3'))`); err != nil {
		t.Fatalf("pg_advisory_lock as %s: %v", login, err)
	}
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "victim3"}
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "victim"); err != nil {
		t.Fatalf("Acquire(%v) while %s holds the old advisory lock: %v, want granted", k, login, err)
	}
}

// TestFencesRiseAcrossARacingAcquireAndRelease makes the race the advisory
// lock used to prevent: acquire A draws its fence for a fresh insert and
// then waits on transaction C, which meanwhile acquires and releases the key
// twice, drawing a higher fence, and commits. A's insert then succeeds on a
// free key with the lower fence. It must not be granted so: lease.acquire
// refuses with 40001, and Store.Acquire retries and gets a higher fence.
func TestFencesRiseAcrossARacingAcquireAndRelease(t *testing.T) {
	t.Parallel()
	for _, viaStore := range []bool{false, true} {
		name := map[bool]string{false: "lease.acquire", true: "Store.Acquire"}[viaStore]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			k := data.Key{Account: "acme", Session: "race"}
			c, a := db.Conn(t), db.Conn(t)
			owner := db.Conn(t)
			var aPID int
			if err := a.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&aPID); err != nil {
				t.Fatal(err)
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // committed below
			c1 := uuid.New()
			if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire($1, $2, $3, '1 minute', 'c')`, k.Account, k.Session, c1); err != nil {
				t.Fatal(err)
			}

			type result struct {
				fence int64
				err   error
			}
			done := make(chan result, 1)
			store := data.New(db.Pool(t))
			go func() {
				run := uuid.New()
				if viaStore {
					g, err := store.Acquire(ctx, k, run, time.Minute, "a")
					done <- result{g.Fence, err}
					return
				}
				var f int64
				err := a.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 minute', 'a')`, k.Account, k.Session, run).Scan(&f)
				done <- result{f, err}
			}()
			waitBlocked(t, owner, aPID, viaStore)

			// C releases, acquires again (a fence above A's), releases, commits.
			c2 := uuid.New()
			var f2 int64
			for _, q := range []struct {
				sql  string
				run  uuid.UUID
				scan bool
			}{
				{`SELECT lease.release($1, $2, $3)`, c1, false},
				{`SELECT fence FROM lease.acquire($1, $2, $3, '1 minute', 'c')`, c2, true},
				{`SELECT lease.release($1, $2, $3)`, c2, false},
			} {
				row := tx.QueryRow(ctx, q.sql, k.Account, k.Session, q.run)
				var v any
				if q.scan {
					v = &f2
				} else {
					v = new(bool)
				}
				if err := row.Scan(v); err != nil {
					t.Fatalf("%s: %v", q.sql, err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}

			r := <-done
			var pgErr *pgconn.PgError
			switch {
			case r.err == nil && r.fence <= f2:
				t.Fatalf("A was granted fence %d after a released lease with fence %d: fences must rise per key", r.fence, f2)
			case r.err == nil:
			case !viaStore && errors.As(r.err, &pgErr) && pgErr.Code == "40001":
				if _, _, held := leaseOf(t, owner, k); held {
					t.Fatal("the refused acquire left a lease behind")
				}
			default:
				t.Fatalf("A's acquire err = %v, want a grant above fence %d (or, from lease.acquire, 40001)", r.err, f2)
			}
		})
	}
}

// waitBlocked polls pg_stat_activity until the backend pid (or, with any,
// some backend of this database running lease.acquire) waits for a lock.
func waitBlocked(t *testing.T, conn *pgx.Conn, pid int, any bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()
			  AND (pid = $1 OR ($2 AND query LIKE '%lease.acquire%'))`, pid, any).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the racing acquire never waited for the other transaction")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}
