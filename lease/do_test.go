package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/lease/leasetest"
)

func TestDoReleasesAfterFunctionReturns(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	errWork := errors.New("work failed")
	var seen *lease.Lease
	err := c.Do(context.Background(), permit(t, c, testKey, "h"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
		seen = l
		if got := holderOf(t, store, testKey); got.RunID != l.RunID() {
			t.Errorf("inside Do the holder is %v, want %v", got.RunID, l.RunID())
		}
		if ctx.Err() != nil {
			t.Errorf("ctx done inside Do: %v", ctx.Err())
		}
		return errWork
	})
	if !errors.Is(err, errWork) || errors.Is(err, lease.ErrLost) {
		t.Errorf("Do err = %v, want the function's error and no loss", err)
	}
	if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
		t.Errorf("lease still held by %v after Do", got.RunID)
	}
	if !errors.Is(seen.Err(), lease.ErrReleased) {
		t.Errorf("cause after Do = %v, want ErrReleased", seen.Err())
	}
}

func TestDoReportsLossOnlyWhenHeld(t *testing.T) {
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: time.Second})
	other := newClient(t, store, lease.Config{TTL: 30 * time.Second})

	// Never held: the acquisition error, no loss, fn not called.
	holder := acquire(t, other, permit(t, other, testKey, "other"))
	called := false
	err := c.Do(context.Background(), permit(t, c, testKey, "h"), lease.BusyRefuse, func(context.Context, *lease.Lease) error {
		called = true
		return nil
	})
	if !errors.Is(err, lease.ErrHeld) || errors.Is(err, lease.ErrLost) || called {
		t.Errorf("Do while held elsewhere = %v (called %v), want ErrHeld, no loss, not called", err, called)
	}
	holder.Release(context.Background())

	// Held, then force-released while fn runs: fn's ctx is cancelled with
	// the loss, and Do reports it after fn returned.
	var cause error
	err = c.Do(context.Background(), permit(t, c, testKey, "h"), lease.BusyWait, func(ctx context.Context, l *lease.Lease) error {
		if _, err := store.ForceRelease(context.Background(), testKey, l.RunID(), "test"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return ctx.Err()
		case <-time.After(20 * time.Second):
			return errors.New("ctx not cancelled after the forced release")
		}
	})
	var lost *lease.LostError
	if !errors.As(err, &lost) || !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrForceReleased) {
		t.Errorf("Do err = %v, want the *LostError (ErrLost, ErrForceReleased)", err)
	}
	if !errors.Is(cause, lease.ErrForceReleased) {
		t.Errorf("fn's context cause = %v, want ErrForceReleased", cause)
	}
}

// A loss is one error on one line: fn's "context canceled" (here from a
// query on a pgx connection, as a worker usually sees it) is the loss's consequence
// and is not repeated; an error of fn's own follows the loss on the same
// line, and both match.
func TestDoLossIsOneLine(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	pool := db.Pool(t)
	c := newClient(t, store, lease.Config{TTL: time.Second})
	errOwn := errors.New("the model call failed")
	for _, tc := range []struct {
		name      string
		fnErr     func(ctx context.Context, l *lease.Lease) error // what fn returns once its ctx is done
		wantOwn   bool
		wantStale bool
	}{
		{"pgx context canceled", func(ctx context.Context, _ *lease.Lease) error {
			_, err := pool.Exec(ctx, `SELECT 1`)
			return err
		}, false, false},
		{"context cause", func(ctx context.Context, _ *lease.Lease) error { return context.Cause(ctx) }, false, false},
		{"FencedTx refused", func(ctx context.Context, l *lease.Lease) error {
			return l.FencedTx(context.Background(), pool, func(context.Context, pgx.Tx) error { return nil })
		}, false, true},
		{"an error of its own", func(context.Context, *lease.Lease) error { return errOwn }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Do(context.Background(), permit(t, c, testKey, "h"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
				leasetest.ForceLoss(t, store, l)
				<-ctx.Done()
				return tc.fnErr(ctx, l)
			})
			if msg := fmt.Sprint(err); strings.Contains(msg, "\n") || strings.Contains(msg, "context canceled") {
				t.Errorf("Do err = %q, want one line without \"context canceled\"", msg)
			}
			if !errors.Is(err, lease.ErrLost) || !errors.Is(err, lease.ErrForceReleased) {
				t.Errorf("Do err = %v, want ErrLost and ErrForceReleased", err)
			}
			if got := errors.Is(err, errOwn); got != tc.wantOwn {
				t.Errorf("errors.Is(Do err, fn's own error) = %v, want %v (err %v)", got, tc.wantOwn, err)
			}
			if got := errors.Is(err, lease.ErrStale); got != tc.wantStale {
				t.Errorf("errors.Is(Do err, ErrStale) = %v, want %v (err %v)", got, tc.wantStale, err)
			}
		})
	}
}

// The caller's cancellation reaches fn, and the lease is still released after
// fn returns.
func TestDoCallerCancel(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := db.Store(t)
	c := newClient(t, store, lease.Config{TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	err := c.Do(ctx, permit(t, c, testKey, "h"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
		cancel()
		<-ctx.Done()
		if l.Err() != nil {
			t.Errorf("lease ended by the caller's cancel: %v", l.Err())
		}
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, lease.ErrLost) {
		t.Errorf("Do err = %v, want context.Canceled and no loss", err)
	}
	if got := holderOf(t, store, testKey); got.RunID != [16]byte{} {
		t.Errorf("lease still held by %v after Do", got.RunID)
	}
}
