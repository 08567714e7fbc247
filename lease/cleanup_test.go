package lease_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/leaserow"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	leasesql "github.com/leasetop/leasetop/sql"
)

// A Wait whose context ends while its acquire is queued on the server
// (behind the row lock of a fenced transaction) must leave no grant behind.
// When pgx gives the connection up it sends a cancel request, but only after
// the call has returned, so the statement can still run when the lock is
// gone: if the cancel arrives late, or before the statement has started
// (then the server drops it; here it cannot even connect), the queued
// acquire takes the session over for a run nobody holds, after the
// clean-up's first release found nothing. The clean-up tries the release
// again until the attempt's window has passed, and so ends that grant.
func TestWaitGivingUpWhileQueuedLeavesNoGrant(t *testing.T) {
	tests := []struct {
		name string
		// lose makes the waiter's cancel request fail; the test then lets
		// the row go only after the clean-up's first release.
		lose bool
		// close closes the Client right after that release, as a program
		// that gives up and stops: the clean-up goes on for a second.
		close bool
	}{
		{"cancel request races the grant", false, false},
		{"cancel request lost", true, false},
		{"cancel request lost, client closed", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := pgtest.New(t)
			pool := db.Pool(t)
			held := db.Store(t)
			if _, err := held.Acquire(ctx, testKey, uuid.New(), time.Minute, "holder"); err != nil {
				t.Fatal(err)
			}
			if _, err := leaserow.ExpireNow(ctx, pool, testKey); err != nil {
				t.Fatal(err)
			}
			tx, err := db.Conn(t).Begin(ctx) // the holder's fenced transaction, still open
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if ok, err := leaserow.Lock(ctx, tx, testKey); err != nil || !ok {
				t.Fatalf("leaserow.Lock = %v, %v", ok, err)
			}

			countReleases(t, db)
			store, refuse := dialOnce(t, db)
			w := newClient(t, store, lease.Config{TTL: 3 * time.Second})
			wctx, cancel := context.WithCancel(ctx)
			pending := startWait(wctx, w, permit(t, w, testKey, "waiter"))
			pgtest.Eventually(t, 10*time.Second, "the waiter's acquire to queue behind the row lock", func() bool {
				return acquiresRunning(t, pool, true) == 1
			})
			refuse.Store(tt.lose)
			cancel()
			if r := pending.result(t, 10*time.Second); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("Wait after its context ended = (%v, %v), want context.Canceled", r.l, r.err)
			}
			if tt.lose {
				// The clean-up's first release has found nothing: the row
				// was still the holder's.
				pgtest.Eventually(t, 10*time.Second, "the waiter's clean-up release", func() bool { return releases(t, pool) > 0 })
			}
			closed := make(chan struct{})
			if tt.close {
				go func() { w.Close(); close(closed) }() // it waits for the clean-up
			}
			// The holder's transaction ends: the row is free.
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if tt.close {
				<-closed
			}
			pgtest.Eventually(t, 10*time.Second, "the queued acquire to end on the server", func() bool {
				return acquiresRunning(t, pool, false) == 0
			})
			pgtest.Eventually(t, 10*time.Second, "no grant to the waiter", func() bool {
				l, _, ok, err := held.Lease(ctx, testKey)
				return err == nil && (!ok || l.Holder != "waiter")
			})
			if tt.lose {
				granted := false
				for ev, err := range held.Events(ctx, 0) {
					if err != nil {
						t.Fatal(err)
					}
					granted = granted || ev.Holder == "waiter" && ev.Kind == data.KindTakenOver
				}
				if !granted {
					t.Error("the queued acquire never took the session over: the lost cancel request did not happen as the test means")
				}
			}
		})
	}
}

// dialOnce opens a store on db with 3 connections open, and a switch that
// makes every later connection attempt fail: the cancel requests pgx sends
// on a connection of its own.
func dialOnce(t *testing.T, db pgtest.DB) (*data.Store, *atomic.Bool) {
	t.Helper()
	cfg, err := data.ParsePoolConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	refuse := &atomic.Bool{}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if refuse.Load() {
			return nil, errors.New("no new connection: a cancel request lost")
		}
		return dial(ctx, network, addr)
	}
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var conns []*pgxpool.Conn
	for range 3 {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return data.New(pool), refuse
}

// countReleases makes db's lease.release count its calls in
// public.release_calls (the shipped function, one INSERT added), so that a
// test can wait for a release it cannot see otherwise.
func countReleases(t *testing.T, db pgtest.DB) {
	t.Helper()
	var fn string
	for _, f := range leasesql.Files() {
		if i := strings.Index(f.SQL, "CREATE OR REPLACE FUNCTION lease.release("); i >= 0 {
			fn = f.SQL[i : i+strings.Index(f.SQL[i:], "\n$fn$;")+len("\n$fn$;")]
		}
	}
	const del = "    DELETE FROM lease.session_lease l"
	if !strings.Contains(fn, del) {
		t.Fatal("lease.release has no DELETE where this test expects it: update countReleases")
	}
	conn := db.Conn(t)
	for _, sql := range []string{
		`CREATE TABLE public.release_calls (at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`GRANT INSERT ON public.release_calls TO PUBLIC`,
		strings.Replace(fn, del, "    INSERT INTO public.release_calls DEFAULT VALUES;\n"+del, 1),
	} {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
}

// releases returns how many times lease.release was called (countReleases).
func releases(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM public.release_calls`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// acquiresRunning counts the backends of pool's database running
// lease.acquire, only those waiting for a lock when waiting.
func acquiresRunning(t *testing.T, pool *pgxpool.Pool, waiting bool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND query LIKE '%lease.acquire%'
		  AND pid <> pg_backend_pid() AND (NOT $1 OR wait_event_type = 'Lock')`, waiting).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
