package data_test

import (
	"context"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// BenchmarkMonthKeptCost is BenchmarkPartitionCost with 30 days of
// history kept (monthFixture, 300 events a day: 40 partitions with the days
// ahead and the DEFAULT one) in both databases, the plain table holding the
// same rows: what a transition costs once the fence-race read
// (lease.higher_fences) has a month of partitions to prune.
//
//	go test ./data -run '^$' -bench MonthKeptCost -benchtime 2000x
func BenchmarkMonthKeptCost(b *testing.B) {
	ctx := context.Background()
	with, without := pgtest.New(b), pgtest.New(b)
	monthFixture(b, with, 30, 300)
	monthFixture(b, without, 30, 300)
	plainEventTable(b, without)
	if _, err := without.Conn(b).Exec(ctx, `
		INSERT INTO lease.event OVERRIDING SYSTEM VALUE SELECT * FROM lease.event_partitioned;
		SELECT setval('lease.event_id_seq', (SELECT max(id) FROM lease.event));
		ANALYZE lease.event`); err != nil {
		b.Fatal(err)
	}
	interleavedCycles(b, with.Store(b), without.Store(b))
}
