package monitor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/monitortest"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestMirrorPauseHoldsBatchesForOnBatch: a paused mirror applies at most
// the batch it was already waiting for, whatever happens meanwhile; after
// Resume it catches up, and its OnBatch hook has seen every event it
// applied.
func TestMirrorPauseHoldsBatchesForOnBatch(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, conn, writer := db.Store(t), db.Conn(t), db.Store(t)
	// No periodic reads: only the transitions below make batches.
	m := monitortest.NewMirror(s, monitor.FeedConfig{DeltaInterval: time.Hour, NotifiedInterval: time.Hour}, monitor.Config{})
	var (
		mu      sync.Mutex
		batches int
		hooked  = map[int64]int{} // event id: times OnBatch saw it
	)
	m.OnBatch(func(b monitor.Batch) {
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, it := range b.Items {
			if it.Event != nil {
				hooked[it.Event.ID]++
			}
			if it.Sync != nil {
				for _, e := range it.Sync.Events {
					hooked[e.ID]++
				}
			}
		}
	})
	applied := func() int {
		mu.Lock()
		defer mu.Unlock()
		return batches
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = m.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })
	if applied() == 0 {
		t.Fatal("OnBatch saw no batch, but the mirror applied its first resync")
	}

	m.Pause()
	before := applied()
	for i := range 20 {
		k, run := data.Key{Account: "pause", Session: fmt.Sprintf("s%d", i)}, uuid.New()
		monitor.MustAcquire(t, writer, k, run, time.Minute)
		if _, err := writer.Release(context.Background(), k, run); err != nil {
			t.Fatalf("Release(%v) err = %v", k, err)
		}
	}
	whilePaused := applied() - before
	m.Resume()
	assertMirrorsDB(t, m, conn)
	if whilePaused > 1 {
		t.Errorf("the mirror applied %d batches while paused through 40 transitions, want at most the one it was waiting for", whilePaused)
	}
	var baseline int64
	m.Read(func(s *monitor.State) { baseline = s.Baseline() })
	mu.Lock()
	defer mu.Unlock()
	for _, id := range eventIDs(t, conn, baseline) {
		if hooked[id] == 0 {
			t.Errorf("the mirror applied event %d, but OnBatch never saw it", id)
		}
	}
}

// TestMirrorRunEndsWhilePaused: cancelling the context ends Run even while
// the mirror is paused.
func TestMirrorRunEndsWhilePaused(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	m := monitortest.NewMirror(s, monitor.FeedConfig{}, monitor.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, m, "the first resync", func(s *monitor.State) bool { return s.Synced() })
	m.Pause()
	monitor.MustAcquire(t, db.Store(t), data.Key{Account: "pause", Session: "s"}, uuid.New(), time.Minute) // something pending
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of its context's end while paused")
	}
}
