package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

func TestTryOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	cfg := lease.Config{TTL: 10 * time.Second}
	a, b := newClient(t, store, cfg), newClient(t, store, cfg)
	ctx := context.Background()

	before := time.Now()
	la := acquire(t, a, permit(t, a, testKey, "a"))
	after := time.Now()
	st := la.State()
	window := cfg.TTL - a.Config().SafetyMargin
	if st.Status != lease.Held || la.Err() != nil {
		t.Errorf("new lease status %v err %v, want held, nil", st.Status, la.Err())
	}
	// The local deadline counts from the send time of the request.
	if st.Deadline.Before(before.Add(window)) || st.Deadline.After(after.Add(window)) {
		t.Errorf("Deadline = %v after the call, want within [%v, %v] (send time + TTL - margin)",
			st.Deadline.Sub(before), window, after.Sub(before)+window)
	}
	row := holderOf(t, store, testKey)
	if row.RunID != la.RunID() || row.Fence != la.Fence() || row.Holder != "a" || !row.ExpiresAt.Equal(st.ExpiresAt) {
		t.Errorf("row = %+v, want run %v fence %d holder a expiry %v", row, la.RunID(), la.Fence(), st.ExpiresAt)
	}

	_, err := b.Try(ctx, permit(t, b, testKey, "b"))
	var held *lease.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Try while held err = %v, want *HeldError", err)
	}
	if held.RunID != la.RunID() || held.Holder != "a" || held.Remaining <= 0 || held.Remaining > cfg.TTL {
		t.Errorf("HeldError = %+v, want run %v holder a with 0 < remaining <= TTL", held, la.RunID())
	}

	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release err = %v", err)
	}
	lb := acquire(t, b, permit(t, b, testKey, "b"))
	if lb.RunID() == la.RunID() {
		t.Errorf("second execution reused run id %v, want a fresh one", lb.RunID())
	}
	if lb.Fence() <= la.Fence() {
		t.Errorf("fence after handoff = %d, want > %d", lb.Fence(), la.Fence())
	}
}

func TestTryAfterClose(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	c := newClient(t, db.Store(t), lease.Config{})
	p := permit(t, c, testKey, "h")
	c.Close()
	c.Close() // idempotent
	if _, err := c.Try(context.Background(), p); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("Try after Close err = %v, want ErrClosed", err)
	}
	if _, err := c.Wait(context.Background(), p); !errors.Is(err, lease.ErrClosed) {
		t.Errorf("Wait after Close err = %v, want ErrClosed", err)
	}
}

// A grant whose reply cannot arrive before its safe deadline is never
// returned as held: the request is held in the network past TTL - margin.
func TestTryLateGrantIsNotHeld(t *testing.T) {
	db := pgtest.New(t)
	proxy, dsn := pgtest.Proxied(t, db.URL)
	slow := pgtest.OpenStore(t, dsn, data.Options{})
	cfg := lease.Config{TTL: time.Second, SafetyMargin: 300 * time.Millisecond, RenewInterval: 200 * time.Millisecond}
	c := newClient(t, slow, cfg)
	p := permit(t, c, testKey, "slow")
	if _, err := slow.Snapshot(context.Background()); err != nil { // a live pool connection
		t.Fatal(err)
	}
	proxy.HoldRequests()
	done := make(chan struct{})
	var l *lease.Lease
	var err error
	go func() {
		defer close(done)
		l, err = c.Try(context.Background(), p)
	}()
	pgtest.Eventually(t, 10*time.Second, "the acquire request to reach the proxy", func() bool { return proxy.Held() > 0 })
	<-done
	proxy.Resume()
	if err == nil || l != nil {
		t.Fatalf("Try with a reply later than TTL - margin = %v, %v; want no lease and an error", l, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lease.ErrExpired) {
		t.Errorf("Try err = %v, want a deadline or ErrExpired", err)
	}
	// Whatever the server granted is released in the background or expires:
	// another run gets the lease without anyone having used it.
	direct := db.Store(t)
	w := newClient(t, direct, lease.Config{TTL: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lw, err := w.Wait(ctx, permit(t, w, testKey, "next"))
	if err != nil {
		t.Fatalf("Wait after the late grant err = %v", err)
	}
	defer lw.Release(context.Background())
}
