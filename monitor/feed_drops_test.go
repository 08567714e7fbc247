package monitor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestMirrorMissesNothingWhenTheListenerDrops starves the feed: a listener
// buffer of 4 events, a late-commit window of 200 ids (4 writers have a few
// ids in flight, more on a loaded machine) and resyncs cut at 7 events,
// under 1200 transitions from 4 connections. The listener drops most
// notifications; the resyncs must start below every dropped id (not merely
// a window below the highest delivered one, which later events push past the
// dropped ids) and page on when cut, so the mirror still sees every event.
func TestMirrorMissesNothingWhenTheListenerDrops(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	m := startMirror(t, s, monitor.FeedConfig{
		Listener:    data.ListenerConfig{Buffer: 4},
		Window:      200,
		ResyncLimit: 7,
	})
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })

	var wg sync.WaitGroup
	for w := range 4 {
		client := db.Store(t) // its own pool: independent connections
		wg.Go(func() {
			ctx := context.Background()
			for i := range 150 {
				k, run := data.Key{Account: "drops", Session: fmt.Sprintf("w%d-%d", w, i%3)}, uuid.New()
				if _, err := client.Acquire(ctx, k, run, time.Minute, "d"); err != nil {
					t.Error(err)
					return
				}
				if _, err := client.Release(ctx, k, run); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	assertMirrorsDB(t, m, conn)
	m.Read(func(s *monitor.State) {
		if s.Gaps() != 0 {
			t.Errorf("Gaps() = %d, want 0: a cut resync pages on", s.Gaps())
		}
	})
}
