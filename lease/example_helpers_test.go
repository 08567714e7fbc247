package lease_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/leasetop/leasetop/data"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// exampleDatabase returns a fresh database with the lease schema (in your
// program: the DATABASE_URL of a database where `leasetop migrate` ran) and
// a function that drops it.
func exampleDatabase() (string, func()) {
	dsn, drop, err := pgtest.NewURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return "", func() {}
	}
	return dsn, drop
}

// waitQueueLength polls key's queue until it holds n live tickets (for at
// most ten seconds): an example's way to know the order its waiters queued in.
func waitQueueLength(ctx context.Context, store *data.Store, key data.Key, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if q, err := store.QueueOf(ctx, key); err == nil && len(q) == n {
			return
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	fmt.Fprintf(os.Stderr, "queue of %s never reached %d tickets\n", key, n)
}
