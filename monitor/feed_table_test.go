package monitor_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestFeedResyncSharedByStates: a feed's resync, whose leases the feed read
// into columns, applied to two States (the second through Batch.Clone: the
// first takes the leases) gives each its own copy: a release applied to one
// leaves the other's lease in place, and both equal the database before it.
func TestFeedResyncSharedByStates(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	keys := []data.Key{{Account: "a", Session: "s1"}, {Account: "a", Session: "s2"}, {Account: "b", Session: "s1"}}
	for _, k := range keys {
		if _, err := s.Acquire(context.Background(), k, uuid.New(), time.Minute, "dev"); err != nil {
			t.Fatalf("Acquire(%v) err = %v", k, err)
		}
	}
	want := dbLeases(t, db.Conn(t))
	feed := monitor.NewFeed(s, monitor.FeedConfig{})
	stop := feed.Start(context.Background())
	defer stop()
	one, two := monitor.NewState(monitor.Config{}), monitor.NewState(monitor.Config{})
	for !one.Synced() {
		b, ok := feed.Next()
		if !ok {
			t.Fatal("the feed stopped before its first resync")
		}
		other := b.Clone()
		one.Apply(b, time.Now())
		two.Apply(other, time.Now())
	}
	for _, st := range []*monitor.State{one, two} {
		if d := sameAsDB(st, want); d != "" {
			t.Fatalf("after the resync: %s", d)
		}
	}
	l, _ := one.Lease(keys[0])
	one.ApplyEvent(data.Event{ID: 1 << 40, Kind: data.KindReleased, Key: keys[0], RunID: l.RunID, Fence: l.Fence}, time.Now())
	if _, ok := one.Lease(keys[0]); ok {
		t.Fatalf("the state the release was applied to still shows %v", keys[0])
	}
	if d := sameAsDB(two, want); d != "" {
		t.Errorf("the other state changed with it: %s", d)
	}
}
