package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestOnBusyIsSpelledOneWay: every busy strategy reads and parses as one
// word, in Go, in JSON and on the command line (leasetop run's --on-busy
// and --then, the demo's --strategy), and the old names are the same
// values.
func TestOnBusyIsSpelledOneWay(t *testing.T) {
	t.Parallel()
	want := map[lease.OnBusy]string{
		lease.BusyRefuse: "refuse", lease.BusyWait: "wait", lease.BusyQueue: "queue",
		lease.BusyPreempt: "preempt", lease.BusyJoin: "join", lease.BusyAsk: "ask",
	}
	for b, name := range want {
		if got := b.String(); got != name {
			t.Errorf("%d.String() = %q, want %q", int(b), got, name)
		}
		got, err := lease.ParseOnBusy(name)
		if err != nil || got != b {
			t.Errorf("ParseOnBusy(%q) = %v, %v, want %v", name, got, err, b)
		}
		js, err := json.Marshal(b)
		if err != nil || string(js) != `"`+name+`"` {
			t.Errorf("json.Marshal(%v) = %s, %v, want %q", b, js, err, name)
		}
	}
	for _, bad := range []string{"try", "", "Refuse", "join,ask"} {
		if _, err := lease.ParseOnBusy(bad); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("ParseOnBusy(%q) err = %v, want ErrInvalid", bad, err)
		}
	}
	if lease.Try != lease.BusyRefuse || lease.Wait != lease.BusyWait || lease.ThenRefuse != lease.BusyRefuse ||
		lease.ThenQueue != lease.BusyQueue || lease.ThenPreempt != lease.BusyPreempt {
		t.Error("the deprecated names are not the strategies they stand for")
	}
	for name, fallback := range map[string]bool{"refuse": true, "queue": true, "preempt": true, "wait": false, "join": false, "ask": false} {
		if _, err := lease.ParseThen(name); (err == nil) != fallback {
			t.Errorf("ParseThen(%q) err = %v, want an error %v", name, err, !fallback)
		}
	}
}

// TestDoOnBusy: Do acquires as its strategy says: BusyQueue queues behind
// the holder and runs fn once it is granted the lease in turn; the
// strategies that need more than a Permit are refused as invalid input,
// nothing acquired and fn not called.
func TestDoOnBusy(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	other := newClient(t, store, lease.Config{TTL: 30 * time.Second})
	ctx := context.Background()

	for _, b := range []lease.OnBusy{lease.BusyPreempt, lease.BusyAsk, lease.BusyJoin} {
		called := false
		err := c.Do(ctx, permit(t, c, testKey, "h"), b, func(context.Context, *lease.Lease) error { called = true; return nil })
		if !errors.Is(err, data.ErrInvalid) || called {
			t.Errorf("Do(%s) = %v (called %v), want ErrInvalid, not called", b, err, called)
		}
		if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
			t.Errorf("Do(%s) left the lease held by %v", b, got.RunID)
		}
	}

	holder := acquire(t, other, permit(t, other, testKey, "other"))
	ran := make(chan error, 1)
	go func() {
		ran <- c.Do(ctx, permit(t, c, testKey, "queued"), lease.BusyQueue, func(ctx context.Context, l *lease.Lease) error {
			got, _, held, err := store.Lease(ctx, testKey)
			if err != nil || !held || got.RunID != l.RunID() {
				return fmt.Errorf("fn runs while the lease is %v (held %v, err %v), want this run's", got.RunID, held, err)
			}
			return nil
		})
	}()
	pgtest.Eventually(t, 10*time.Second, "Do(queue) to take a ticket", func() bool {
		n, err := store.QueueLengths(ctx)
		return err == nil && n[testKey] == 1
	})
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Do(queue) = %v, want nil once the holder released", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Do(queue) did not run fn within 20s of the release")
	}
}
