package exporter_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestInboxMetrics: the exporter, as a lease_reader, exports the inboxes'
// gauges (live messages, those no run received, conversations, the oldest
// one's wait), counts the message events, and measures a message's send to
// its delivery in leasetop_inbox_delivery_seconds; once acknowledged, the
// gauges fall back to 0.
func TestInboxMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	p := startExporter(t, db.ReaderURL(t))
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool { return m["leasetop_resyncs_total"] >= 1 })
	if m := p.metrics(t); m["leasetop_inbox_messages"] != 0 || m["leasetop_inbox_sessions"] != 0 || m["leasetop_inbox_delivery_seconds_count"] != 0 {
		t.Fatalf("inbox metrics with no message: %v messages, %v sessions, %v deliveries; want 0", m["leasetop_inbox_messages"], m["leasetop_inbox_sessions"], m["leasetop_inbox_delivery_seconds_count"])
	}
	k := data.Key{Account: "acme", Session: "steered"}
	for _, body := range []string{"check March", "and April"} {
		if _, err := s.SendMessage(ctx, k, data.MessageSteer, body, "phone", body, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	p.waitMetrics(t, 30*time.Second, "two messages waiting in one inbox", func(m metricSet) bool {
		return m["leasetop_inbox_messages"] == 2 && m["leasetop_inbox_undelivered"] == 2 && m["leasetop_inbox_sessions"] == 1 &&
			m["leasetop_inbox_oldest_wait_seconds"] > 0 && m[`leasetop_transitions_total{kind="message_sent"}`] == 2
	})
	run := uuid.New()
	if _, err := s.Acquire(ctx, k, run, time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	ms, err := s.ReceiveMessages(ctx, k, run, 0, data.MaxReceive)
	if err != nil || len(ms) != 2 {
		t.Fatalf("ReceiveMessages = %v, %v; want the 2 steers", ms, err)
	}
	p.waitMetrics(t, 30*time.Second, "both delivered, still live", func(m metricSet) bool {
		return m["leasetop_inbox_messages"] == 2 && m["leasetop_inbox_undelivered"] == 0 &&
			m["leasetop_inbox_delivery_seconds_count"] == 2 && m[`leasetop_transitions_total{kind="message_delivered"}`] == 2
	})
	for _, m := range ms {
		if _, err := s.AckMessage(ctx, k, run, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	p.waitMetrics(t, 30*time.Second, "both acknowledged", func(m metricSet) bool {
		return m["leasetop_inbox_messages"] == 0 && m["leasetop_inbox_sessions"] == 0 && m["leasetop_inbox_oldest_wait_seconds"] == 0 &&
			m[`leasetop_transitions_total{kind="message_acked"}`] == 2 && m["leasetop_inbox_delivery_seconds_count"] == 2
	})
}
