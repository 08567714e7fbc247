package monitor_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/monitor"
)

// TestFeedResyncIsTakenNotCopied: a State applying a feed's resync takes the
// table of leases the feed read, it does not copy it: at a million leases
// the copy held some 150 MB beside the table a moment, and the first
// picture's resident memory peaked at 466 MB. A batch is applied
// once; applying it again is a mistake said at once, and Batch.Clone gives
// another State its own copy. Counted in bytes allocated, not time.
func TestFeedResyncIsTakenNotCopied(t *testing.T) {
	t.Parallel()
	const n = 20_000
	s, _, db := proxiedDB(t, n)
	want := dbLeases(t, db.Conn(t))
	feed := monitor.NewFeed(s, monitor.FeedConfig{})
	stop := feed.Start(context.Background())
	defer stop()
	one, two := monitor.NewState(monitor.Config{}), monitor.NewState(monitor.Config{})
	var allocated uint64
	for !one.Synced() {
		b, ok := feed.Next()
		if !ok {
			t.Fatal("the feed stopped before its first resync")
		}
		other := b.Clone()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		one.Apply(b, time.Now())
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
		two.Apply(other, time.Now())
		if one.Synced() {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt2(r), "applied twice") {
						t.Errorf("applying the resync again: recovered %v, want a panic that says it was applied twice", r)
					}
				}()
				monitor.NewState(monitor.Config{}).Apply(b, time.Now())
			}()
		}
	}
	if allocated > n*16 {
		t.Errorf("applying a resync of %d leases allocated %d bytes, want at most %d (the feed's table taken, not copied)", n, allocated, n*16)
	}
	for _, st := range []*monitor.State{one, two} {
		if d := sameAsDB(st, want); d != "" {
			t.Errorf("after the resync: %s", d)
		}
	}
}

// fmt2 is a recovered value as text.
func fmt2(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	s, _ := r.(string)
	return s
}
