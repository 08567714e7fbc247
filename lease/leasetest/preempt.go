package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// PreemptHolder is the holder label of the run Preempt takes the lease for.
const PreemptHolder = "leasetest.Preempt"

// Preempt preempts l's lease as another device would (Client.Preempt,
// recorded as a preempted event with reason), and waits until l has
// noticed: at its next renewal, or at once where its Client hears the
// notification for its key. It returns l's cause, a *lease.LostError with
// lease.ErrPreempted whose By names the preemptor (PreemptHolder). admin
// must be allowed to preempt (the schema's owner, or a member of
// lease_preempt). The preemptor's lease is released when the test ends.
func Preempt(t testing.TB, admin *data.Store, l *lease.Lease, reason string) error {
	t.Helper()
	run := uuid.New()
	if _, err := admin.Preempt(context.Background(), l.Key(), run, time.Minute, PreemptHolder, reason, data.AcquireOptions{}); err != nil {
		t.Fatalf("leasetest.Preempt: %v", err)
	}
	t.Cleanup(func() { _, _ = admin.Release(context.Background(), l.Key(), run) })
	return waitEnded(t, l, "leasetest.Preempt")
}
