// Package leasetest lets a test make a program lose its lease, on a real
// database, to check how the program handles it:
//
//   - ForceLoss: an operator force-releases the lease (lease.ErrForceReleased);
//   - ExpireNow: the lease runs out on the server now, so another run can
//     take it over (the holder's next renewal is rejected); an expired
//     lease nobody took over is removed when the test ends;
//   - Preempt: another device preempts the lease (lease.ErrPreempted);
//   - BlockRenewals: renewals stop getting answers, as when the database is
//     unreachable (lease.AtRisk, then lease.ErrExpired at the local deadline).
//
// AskHandOver asks the holder to hand the lease over, as another device
// would, to check how the program answers its lease.Lease.Asked.
//
// For example, to see a worker stop when its lease is lost:
//
//	err := client.Do(ctx, permit, lease.BusyWait, func(ctx context.Context, l *lease.Lease) error {
//		leasetest.ForceLoss(t, admin, l) // in the test; in real life, any time
//		return worker(ctx, l)            // must return promptly, writing nothing
//	})
//	if !errors.Is(err, lease.ErrForceReleased) { t.Errorf(...) }
//
// Each function takes admin, a store connected as the owner of the lease
// schema (the role that ran leasetop migrate, as a test database's
// superuser is): they act from outside the protocol, which its lease_app
// role cannot do. Failures end the test with t.Fatal.
package leasetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/leaserow"
	"github.com/leasetop/leasetop/lease"
)

// ForceLoss force-releases l's lease on the server, as an operator would,
// and waits until l has noticed: its holder watch hears the release's
// notification and finds the row gone, or its next renewal, within
// Config.RenewInterval, is refused (whichever comes first: a test that
// counts rejected renewals must allow for either). It returns l's cause, a
// *lease.LostError with lease.ErrForceReleased.
func ForceLoss(t testing.TB, admin *data.Store, l *lease.Lease) error {
	t.Helper()
	if _, err := admin.ForceRelease(context.Background(), l.Key(), l.RunID(), "leasetest.ForceLoss"); err != nil {
		t.Fatalf("leasetest.ForceLoss: %v", err)
	}
	return waitEnded(t, l, "leasetest.ForceLoss")
}

// ExpireNow ends key's lease on the database clock now, whoever holds it,
// as if its holder had stopped renewing a TTL ago: another run's next
// attempt takes it over, and the holder's next renewal is refused
// (lease.ErrRejected, or lease.ErrTakenOver once it was taken over). A
// waiting lease.Client.Wait notices at its next attempt, which it makes by
// the old expiry. It fails the test when nobody holds key.
//
// When the test ends, the expired lease is deleted if it is still there
// (nobody took it over, released it or acquired it again; the holder's
// own Release after the loss does nothing), with a released event, so that
// it does not stay behind as an expired lease that counts toward
// leasetop_leases_expired_unclaimed and its alert.
func ExpireNow(t testing.TB, admin *data.Store, key lease.Key) {
	t.Helper()
	expired, ok, err := leaserow.Expire(context.Background(), admin.Pinned(), key)
	switch {
	case err != nil:
		t.Fatalf("leasetest.ExpireNow: %v", err)
	case !ok:
		t.Fatalf("leasetest.ExpireNow: no lease on %s", key)
	}
	t.Cleanup(func() {
		if _, err := leaserow.DeleteExpired(context.Background(), admin.Pinned(), expired); err != nil {
			t.Errorf("leasetest.ExpireNow: cleanup: %v", err)
		}
	})
}

// BlockRenewals holds key's lease row locked, in a transaction on one of
// admin's connections, so that renewals get no answer, as when the
// database stops answering: each one waits until its timeout, the holder
// goes lease.AtRisk, and at its local deadline it loses the lease with
// lease.ErrExpired, before the lease expires on the server. Releases, fence
// checks and takeovers of the key wait too (each for the protocol's
// lock_timeout of 5 s at most).
//
// unblock ends the transaction; it is idempotent and runs when the test
// ends if it has not been called.
func BlockRenewals(t testing.TB, admin *data.Store, key lease.Key) (unblock func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := admin.Pinned().Begin(ctx)
	if err != nil {
		t.Fatalf("leasetest.BlockRenewals: %v", err)
	}
	var once sync.Once
	unblock = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(unblock)
	ok, err := leaserow.Lock(ctx, tx, key)
	switch {
	case err != nil:
		t.Fatalf("leasetest.BlockRenewals: %v", err)
	case !ok:
		t.Fatalf("leasetest.BlockRenewals: no lease on %s", key)
	}
	return unblock
}

// WaitLost waits until l is lost (its Context done with a *lease.LostError)
// and returns the cause. It fails the test if l is still held after twice
// its TTL, or was released instead.
func WaitLost(t testing.TB, l *lease.Lease) error {
	t.Helper()
	return waitEnded(t, l, "leasetest.WaitLost")
}

func waitEnded(t testing.TB, l *lease.Lease, who string) error {
	t.Helper()
	timeout := max(2*l.TTL(), 10*time.Second)
	select {
	case <-l.Done():
	case <-time.After(timeout):
		t.Fatalf("%s: lease on %s still %v after %s", who, l.Key(), l.State().Status, timeout)
	}
	cause := l.Err()
	if l.State().Status != lease.Lost {
		t.Fatalf("%s: lease on %s ended %v (%v), not lost", who, l.Key(), l.State().Status, cause)
	}
	return cause
}
