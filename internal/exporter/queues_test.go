package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestQueueMetrics: the exporter, as a lease_reader, exports the queues'
// gauges (tickets, sessions, longest), counts queue_joined and queue_left,
// and measures a granted waiter's wait in leasetop_queue_wait_seconds.
func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	p := startExporter(t, db.ReaderURL(t))
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	if m := p.metrics(t); m["leasetop_queue_tickets"] != 0 || m["leasetop_queue_sessions"] != 0 {
		t.Fatalf("queue gauges with no queue: %v tickets, %v sessions; want 0", m["leasetop_queue_tickets"], m["leasetop_queue_sessions"])
	}
	k := data.Key{Account: "acme", Session: "q"}
	holder, first := uuid.New(), uuid.New()
	if _, err := s.Acquire(ctx, k, holder, time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	for _, run := range []uuid.UUID{first, uuid.New()} {
		if _, err := s.Enqueue(ctx, k, run, time.Minute, "waiter"); err != nil {
			t.Fatal(err)
		}
	}
	p.waitMetrics(t, 30*time.Second, "two tickets in one queue", func(m metricSet) bool {
		return m["leasetop_queue_tickets"] == 2 && m["leasetop_queue_sessions"] == 1 && m["leasetop_queue_longest"] == 2 &&
			m[`leasetop_transitions_total{kind="queue_joined"}`] == 2
	})
	if _, err := s.Release(ctx, k, holder); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, k, first, time.Minute, "waiter"); err != nil {
		t.Fatal(err)
	}
	p.waitMetrics(t, 30*time.Second, "the head's grant and wait", func(m metricSet) bool {
		return m["leasetop_queue_tickets"] == 1 && m[`leasetop_transitions_total{kind="queue_left"}`] == 1 &&
			m["leasetop_queue_wait_seconds_count"] == 1
	})
}
