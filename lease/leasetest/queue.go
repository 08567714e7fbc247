package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// queueWait bounds WaitQueued.
const queueWait = 30 * time.Second

// WaitQueued polls key's queue until it holds n live tickets, head first,
// and returns them: how a test knows the order in which the goroutines or
// processes it started with lease.Client.Queue took their tickets (start
// the next one after WaitQueued(..., i+1)). store may be any role that can
// read the lease schema (lease_reader). It fails the test after 30 seconds.
func WaitQueued(t testing.TB, store *data.Store, key lease.Key, n int) []data.Ticket {
	t.Helper()
	deadline := time.Now().Add(queueWait)
	for {
		q, err := store.QueueOf(context.Background(), key)
		if err != nil {
			t.Fatalf("leasetest.WaitQueued: %v", err)
		}
		if len(q) == n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("leasetest.WaitQueued: the queue of %s holds %d tickets after %s, want %d", key, len(q), queueWait, n)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}
