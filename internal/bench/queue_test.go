package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestQueueWorkload runs the queue workload briefly: 16 waiters granted the
// lease round after round, every grant in queue order, each handoff timed.
func TestQueueWorkload(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := bench.Run(context.Background(), bench.Config{
		DSN: db.URL, Clients: 16, Keys: 16, Duration: time.Second, Warmup: 100 * time.Millisecond,
		Only: []string{"queue"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("results %+v, want the queue's one", rep.Results)
	}
	res := rep.Results[0]
	if res.Name != "queue" || res.Error != "" || res.Ops == 0 || res.P50ms <= 0 || !strings.Contains(res.Note, " 0 out of order") {
		t.Fatalf("queue: %+v; want handoffs timed and 0 grants out of order", res)
	}
	t.Logf("queue: %d handoffs, p50 %.2f ms, p99 %.2f ms; %s", res.Ops, res.P50ms, res.P99ms, res.Note)
}
