package exporter_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestReplayedEventsAreNotCounted: a role with CONNECT only
// sends again, five times, the notifications of 21 acquisitions and a
// forced release older than the exporter's first resync (600 newer events
// put them below its tail), but not the releases that followed the
// acquisitions. Before, every id the State had not seen counted (the
// report's acquired 20 -> 165, force_released 0 -> 1), and each old
// acquisition, whose lease is long gone, showed as an expired unclaimed
// lease. Now none counts, and a real acquire after them counts once.
func TestReplayedEventsAreNotCounted(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	for i := range 20 {
		k, run := data.Key{Account: "old", Session: fmt.Sprintf("s%d", i)}, uuid.New()
		if _, err := s.Acquire(ctx, k, run, time.Millisecond, "old"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Release(ctx, k, run); err != nil {
			t.Fatal(err)
		}
	}
	forced := data.Key{Account: "old", Session: "forced"}
	if _, err := s.Acquire(ctx, forced, uuid.New(), time.Minute, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForceReleaseAny(ctx, forced, "old"); err != nil {
		t.Fatal(err)
	}
	old := pgtest.History(t, s)
	pgtest.BulkEvents(t, db, 600)

	p := startExporter(t, db.URL)
	p.waitMetrics(t, 30*time.Second, "the first sync", func(m metricSet) bool {
		return m[`leasetop_feed_state{state="live"}`] == 1 && m["leasetop_resyncs_total"] >= 1
	})
	before := p.metrics(t).transitions()

	// Their releases are not sent again: the old leases would stay, expired.
	var replayed []data.Event
	for _, ev := range old {
		if ev.Kind != data.KindReleased {
			replayed = append(replayed, ev)
		}
	}
	nobody := pgtest.ConnectNobody(t, db)
	for range 5 {
		nobody.Notify(t, pgtest.Replays(t, replayed, 1))
	}
	if _, err := s.Acquire(ctx, data.Key{Account: "new", Session: "s"}, uuid.New(), time.Minute, "new"); err != nil {
		t.Fatal(err)
	}
	m := p.waitMetrics(t, 30*time.Second, "the new acquire to count", func(m metricSet) bool {
		return m.transitions()["acquired"] > before["acquired"]
	})
	want := maps.Clone(before)
	want["acquired"]++
	if got := m.transitions(); !maps.Equal(got, want) {
		t.Errorf("after replays of %d old events and one new acquire, leasetop_transitions_total = %v, want %v", len(replayed), got, want)
	}
	if got := m["leasetop_leases_expired_unclaimed"]; got != 0 {
		t.Errorf("leasetop_leases_expired_unclaimed = %g after the replays, want 0", got)
	}
}
