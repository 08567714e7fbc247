package data_test

import (
	"context"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkPinnedRead is what a one-row read costs through Pinned: on the
// pool as it is (no pin: the cost before statements were pinned), pinned per transaction
// (BEGIN with the pin, the read, COMMIT: a library store's default), and on
// a store whose sessions were pinned at start-up (leasetop's commands on a
// direct connection), where Pinned is the pool.
func BenchmarkPinnedRead(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	unpinned := db.Store(b)
	startup, err := data.OpenWith(ctx, db.URL, data.Options{PinSearchPath: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(startup.Close)
	for _, c := range []struct {
		name string
		q    data.Querier
	}{
		{"pool", unpinned.Pool()},
		{"pinned_per_transaction", unpinned.Pinned()},
		{"pinned_at_startup", startup.Pinned()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var id int64
			for b.Loop() {
				if err := c.q.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM lease.event`).Scan(&id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
