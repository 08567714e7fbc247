package lease_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// listening reports whether a lease client's listener connection has
// issued a LISTEN (pgxlisten issues one per channel, in no fixed order).
func listening(t *testing.T, pool *pgxpool.Pool) bool {
	t.Helper()
	return listeners(t, pool) > 0
}

// listeners counts the lease clients' listener connections that have
// issued a LISTEN.
func listeners(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'leasetop listener' AND query ILIKE 'listen%'`).Scan(&n)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	return n
}

// A waiter is woken by the release notification: with a 30 s TTL and a 30 s
// poll, only the notification can hand it the lease within the test's 15 s.
func TestWaitWokenByRelease(t *testing.T) {
	for _, forced := range []bool{false, true} {
		name := map[bool]string{false: "released", true: "force_released"}[forced]
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			store := db.Store(t)
			pool := db.Pool(t)
			cfg := lease.Config{TTL: 30 * time.Second, PollInterval: 30 * time.Second}
			a, b := newClient(t, store, cfg), newClient(t, store, cfg)
			la := acquire(t, a, permit(t, a, testKey, "a"))

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			outcome := waitAsync(ctx, b, permit(t, b, testKey, "b"))
			pgtest.Eventually(t, 10*time.Second, "the waiter's listener", func() bool { return listening(t, pool) })
			lb := handOff(t, la, func() error {
				if forced {
					_, err := store.ForceRelease(context.Background(), testKey, la.RunID(), "handoff")
					return err
				}
				return la.Release(context.Background())
			}, outcome)
			// With no waiter left and nothing held (a held lease keeps it
			// for the holder watch), the listener connection is closed.
			if err := lb.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			pgtest.Eventually(t, 10*time.Second, "the listener to stop", func() bool { return !listening(t, pool) })
		})
	}
}

// A holder that died (no heartbeat, no release) is taken over when its lease
// expires on the server, not before.
func TestWaitTakesOverExpired(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	deadRun := uuid.New()
	g, err := store.Acquire(context.Background(), testKey, deadRun, time.Second, "dead") // held, never renewed
	if err != nil {
		t.Fatal(err)
	}
	w := newClient(t, store, lease.Config{TTL: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := w.Wait(ctx, permit(t, w, testKey, "next"))
	if err != nil {
		t.Fatalf("Wait err = %v", err)
	}
	defer l.Release(context.Background())
	evs, err := store.EventsFor(context.Background(), testKey, 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("EventsFor = %v, %v", evs, err)
	}
	e := evs[0]
	if e.Kind != "taken_over" || e.PrevRunID != data.PublicRunID(deadRun) || e.RunID != l.RunID() {
		t.Fatalf("last event = %+v, want taken_over from %v to %v", e, deadRun, l.RunID())
	}
	if e.At.Before(g.ExpiresAt) {
		t.Errorf("taken over at %v, before the expiry %v", e.At, g.ExpiresAt)
	}
	if l.Fence() <= g.Fence {
		t.Errorf("fence %d, want > %d", l.Fence(), g.Fence)
	}
}

func TestWaitGivesUpWithContext(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 30 * time.Second}
	a, b := newClient(t, store, cfg), newClient(t, store, cfg)
	la := acquire(t, a, permit(t, a, testKey, "a"))
	errStop := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(errStop) })
	l, err := b.Wait(ctx, permit(t, b, testKey, "b"))
	if l != nil || !errors.Is(err, errStop) {
		t.Errorf("Wait = %v, %v; want nil, the context's cause", l, err)
	}
	if got := holderOf(t, store, testKey); got.RunID != la.RunID() {
		t.Errorf("holder %v, want %v", got.RunID, la.RunID())
	}
}

func TestWaitEndsWhenClientCloses(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 30 * time.Second, PollInterval: 30 * time.Second}
	a := newClient(t, store, cfg)
	acquire(t, a, permit(t, a, testKey, "a"))
	b, err := lease.New(store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := permit(t, b, testKey, "b")
	errc := make(chan error, 1)
	go func() {
		_, err := b.Wait(context.Background(), p)
		errc <- err
	}()
	pgtest.Eventually(t, 10*time.Second, "the waiter's listener", func() bool { return listening(t, db.Pool(t)) })
	b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, lease.ErrClosed) {
			t.Errorf("Wait after Close err = %v, want ErrClosed", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Wait still waiting after Close")
	}
}

// TestWaitRetriesOnlyWhatCanChange: Wait returns an error that every retry
// would repeat (a missing privilege, a missing schema) at once, and keeps
// retrying one that may go away (a refused connection) until its context
// ends.
func TestWaitRetriesOnlyWhatCanChange(t *testing.T) {
	db := pgtest.New(t)
	readerURL, _ := pgtest.Login(t, db, "lease_reader")
	errStop := errors.New("caller gave up")
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) *data.Store
		fuse  time.Duration // when the caller gives up
		want  error
	}{
		{"permission denied", func(t *testing.T) *data.Store { return pgtest.OpenStore(t, readerURL, data.Options{}) },
			10 * time.Second, data.ErrPermission},
		{"no lease schema", func(t *testing.T) *data.Store { return data.New(pgtest.NewEmpty(t).Pool(t)) },
			10 * time.Second, data.ErrSchema},
		{"connection refused", func(t *testing.T) *data.Store {
			return pgtest.LazyStore(t, "postgres://u:pw@127.0.0.1:1/db?connect_timeout=2")
		}, 500 * time.Millisecond, errStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.store(t), lease.Config{TTL: 30 * time.Second, PollInterval: 50 * time.Millisecond})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			fuse := time.AfterFunc(tc.fuse, func() { cancel(errStop) })
			defer fuse.Stop()
			l, err := c.Wait(ctx, permit(t, c, testKey, "w"))
			if l != nil || !errors.Is(err, tc.want) {
				t.Errorf("Wait = %v, %v; want nil, %v", l, err, tc.want)
			}
		})
	}
}

// A holder frozen (SIGSTOP) inside its fenced transaction keeps its expired
// lease's row locked, so every takeover attempt waits for the lock until the
// attempt's own timeout (TTL - safety margin). One attempt timing out is not
// a reason to stop waiting: Wait waits on while its caller's context lives,
// and takes over once the frozen process is gone. Try, which does not wait,
// returns the timeout in one line that names the key once.
func TestWaitOutlivesAttemptTimeouts(t *testing.T) {
	db := pgtest.New(t)
	frozen := startChild(t, db.URL, childFenced, time.Second)
	frozen.Signal(t, syscall.SIGSTOP)
	pgtest.WaitExpired(t, db.Pool(t), testKey)

	var log metricsLog
	cfg := lease.Config{TTL: 3 * time.Second, Metrics: log.hook()} // attempts time out after 2.7 s, before lock_timeout's 5 s
	w := newClient(t, db.Store(t), cfg)
	p := permit(t, w, testKey, "waiter")

	_, err := w.Try(context.Background(), p)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Try on a row locked by a frozen holder err = %v, want its attempt's timeout", err)
	}
	if msg := err.Error(); strings.Count(msg, testKey.String()) != 1 || strings.Contains(msg, "\n") {
		t.Errorf("Try err = %q, want one line naming %s once", msg, testKey)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pending := startWait(ctx, w, p)
	timedOut := count(log.snapshot().acquires, context.DeadlineExceeded)
	pgtest.Eventually(t, 30*time.Second, "one of Wait's attempts to time out", func() bool {
		return count(log.snapshot().acquires, context.DeadlineExceeded) > timedOut
	})
	if r, ok := pending.returned(); ok {
		t.Fatalf("Wait returned (%v, %v) while the holder was still frozen, want it to wait on", r.l, r.err)
	}

	frozen.Signal(t, syscall.SIGKILL) // its connection closes: the transaction ends, the row is free
	l := pending.lease(t, 30*time.Second, "after the frozen holder was killed")
	if l.Fence() <= frozen.fence {
		t.Errorf("fence after takeover = %d, want > the frozen holder's %d", l.Fence(), frozen.fence)
	}
	t.Logf("%d attempts timed out while the holder was frozen", count(log.snapshot().acquires, context.DeadlineExceeded))
}
