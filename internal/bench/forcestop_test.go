package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestForceStopWorkloads: both forcestop workloads measure rounds, listening
// and polling, and every round's holder stopped with ErrForceReleased before
// its first renewal (a round that did not fails the workload).
func TestForceStopWorkloads(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 4, Keys: 16, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Only: []string{"forcestop"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	for _, res := range rep.Results {
		names = append(names, res.Name)
		if res.Error != "" || res.Ops == 0 || res.P50ms <= 0 {
			t.Errorf("%s: error %q, ops %d, p50 %v ms; want ops > 0 and a p50", res.Name, res.Error, res.Ops, res.P50ms)
		}
		t.Logf("%s: %d rounds, p50 %.2f ms, p99 %.2f ms", res.Name, res.Ops, res.P50ms, res.P99ms)
	}
	if got, want := strings.Join(names, ","), "forcestop-notify,forcestop-poll"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
}
