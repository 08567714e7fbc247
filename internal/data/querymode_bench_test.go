package data_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// queryModes are pgx's query modes, the first one the baseline: pgx's
// default, which caches named prepared statements and so fails through a
// transaction pooler.
var queryModes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

// BenchmarkQueryExecMode measures leasetop's calls in each of pgx's query
// modes on a direct connection, interleaved (every iteration runs the call
// once in each mode, the order rotating), and reports each mode's time per
// call and its ratio to cache_statement: what choosing a mode that works
// through a transaction pooler costs where there is none.
//
//	go test ./data -run '^$' -bench QueryExecMode -benchtime 2000x
func BenchmarkQueryExecMode(b *testing.B) {
	ctx := context.Background()
	db := pgtest.New(b)
	stores := make([]*data.Store, len(queryModes))
	for i, mode := range queryModes {
		s, err := data.Open(ctx, db.URL+"&default_query_exec_mode="+mode)
		if err != nil {
			b.Fatalf("open with %s: %v", mode, err)
		}
		b.Cleanup(s.Close)
		stores[i] = s
	}
	const held = 2000 // leases for the snapshot read
	for i := range held {
		k := data.Key{Account: "bench", Session: fmt.Sprintf("held-%d", i)}
		if _, err := stores[0].Acquire(ctx, k, uuid.New(), time.Hour, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	calls := []struct {
		name string
		call func(s *data.Store, i int) error
	}{
		{"acquire+release", func(s *data.Store, i int) error {
			k := data.Key{Account: "bench", Session: fmt.Sprintf("cycle-%d", i%64)}
			run := uuid.New()
			if _, err := s.Acquire(ctx, k, run, time.Minute, "bench"); err != nil {
				return err
			}
			_, err := s.Release(ctx, k, run)
			return err
		}},
		{"lease", func(s *data.Store, i int) error {
			_, _, _, err := s.Lease(ctx, data.Key{Account: "bench", Session: fmt.Sprintf("held-%d", i%held)})
			return err
		}},
		{fmt.Sprintf("snapshot-%d", held), func(s *data.Store, _ int) error {
			snap, err := s.Snapshot(ctx)
			if err == nil && len(snap.Leases) < held {
				err = fmt.Errorf("snapshot has %d leases, want %d", len(snap.Leases), held)
			}
			return err
		}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			spent := make([]time.Duration, len(stores))
			for m, s := range stores { // warm each mode's caches and connection
				if err := c.call(s, 0); err != nil {
					b.Fatalf("%s: %v", queryModes[m], err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				for j := range stores {
					m := (i + j) % len(stores)
					t0 := time.Now()
					if err := c.call(stores[m], i); err != nil {
						b.Fatalf("%s: %v", queryModes[m], err)
					}
					spent[m] += time.Since(t0)
				}
			}
			base := float64(spent[0])
			for m, mode := range queryModes {
				b.ReportMetric(float64(spent[m].Microseconds())/float64(b.N), mode+"-µs/call")
				if m > 0 {
					b.ReportMetric(float64(spent[m])/base, mode+"/cache_statement")
				}
			}
		})
	}
}
