package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestClientThroughPooler: a Client through a real PgBouncer in transaction
// mode acquires, keeps its lease through several renewals, checks its fence
// in a transaction of its own and releases, while another client shares the
// pooler's two server connections.
func TestClientThroughPooler(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	store, other := pgtest.OpenStore(t, via, data.Options{}), pgtest.OpenStore(t, via, data.Options{})
	c := newClient(t, store, lease.Config{TTL: 900 * time.Millisecond})
	busy := newClient(t, other, lease.Config{TTL: 900 * time.Millisecond})
	l := acquire(t, c, permit(t, c, testKey, "pooled"))
	for i := range 5 { // the other client's statements land on the same server connections
		acquire(t, busy, permit(t, busy, lease.Key{Account: "acct", Session: string(rune('a' + i))}, "busy"))
	}
	renewedBy := time.Now().Add(3 * time.Second) // a little over three TTLs: several renewals
	pgtest.Eventually(t, 10*time.Second, "three TTLs of holding", func() bool { return time.Now().After(renewedBy) })
	if st := l.State(); st.Status != lease.Held {
		t.Fatalf("after three TTLs through the pooler: state %v (%v), want Held", st.Status, l.Err())
	}
	if err := pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error { return l.CheckFence(ctx, tx) }); err != nil {
		t.Fatalf("CheckFence through the pooler: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := holderOf(t, store, testKey); got.RunID != uuid.Nil {
		t.Fatalf("after Release the table holds run %v", got.RunID)
	}
}

// TestWaitThroughPooler: a waiter through PgBouncer is handed the lease when
// the holder releases it. With a 1 min TTL and a 1 min fallback poll only
// the listener can wake it within the test's 15 s: without a listen DSN its
// LISTEN through the pooler hears nothing, so it polls lease.event (and says
// so once); with one it listens on the direct connection.
func TestWaitThroughPooler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen bool
	}{{"no listen DSN", false}, {"listen DSN", true}} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.New(t)
			via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
			var polls atomic.Int32
			opt := data.Options{OnPoll: func(data.ListenerState) { polls.Add(1) }}
			if tc.listen {
				opt.ListenDSN = db.URL
			}
			store := pgtest.OpenStore(t, via, opt)
			cfg := lease.Config{TTL: time.Minute, PollInterval: time.Minute}
			a, b := newClient(t, store, cfg), newClient(t, store, cfg)
			la := acquire(t, a, permit(t, a, testKey, "a"))

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			outcome := waitAsync(ctx, b, permit(t, b, testKey, "b"))
			if !tc.listen {
				pgtest.Eventually(t, 10*time.Second, "the waiter's listener to poll", func() bool { return polls.Load() > 0 })
			} else {
				pgtest.Eventually(t, 10*time.Second, "the waiter's listener", func() bool { return listening(t, db.Pool(t)) })
			}
			handOff(t, la, func() error { return la.Release(context.Background()) }, outcome)
			// Each listener says so once: the waiter's, the holder's (the
			// holder watch), which may have been stopped by the release
			// before it got there, and the new holder's (b's listener
			// restarts without the catch-up once it holds instead of waits).
			if got, most := polls.Load(), int32(map[bool]int{false: 3, true: 0}[tc.listen]); got > most || (most > 0 && got == 0) {
				t.Errorf("the listeners entered poll mode %d times, want %d at most (and not 0 without a listen DSN)", got, most)
			}
		})
	}
}
