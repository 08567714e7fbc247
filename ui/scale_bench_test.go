package ui

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// The monitor at scale (docs/BENCHMARKS.md): a model holding 100,000 leases.
// These benchmarks report; they never fail on speed. Run them with
//
//	go test ./ui -run '^$' -bench Scale

const scaleLeases = 100_000

// scaleLeaseSet is n healthy leases over 1000 accounts.
// Accounts and holder labels are made once each, as the feed's read interns
// them: only the sessions are a text per lease, so the heap they leave
// behind is the monitor's.
func scaleLeaseSet(n int) []data.Lease {
	accts, holders := make([]string, 1000), make([]string, 500)
	for i := range accts {
		accts[i] = fmt.Sprintf("acct-%04d", i)
	}
	for i := range holders {
		holders[i] = fmt.Sprintf("device-%d", i)
	}
	out := make([]data.Lease, n)
	for i := range out {
		out[i] = mkLease(accts[i%1000], fmt.Sprintf("sess-%06d", i), holders[i%500],
			run(byte(i)), int64(i+1), time.Hour, time.Duration(i%5000)*time.Millisecond, 15*time.Second)
	}
	return out
}

// scaleModel returns a w x h model on a fixed clock showing leases.
func scaleModel(leases []data.Lease, w, h int) (*Model, *fixedClock) {
	clock := &fixedClock{t: base}
	m, err := New(Config{Now: clock.Now, Location: time.UTC, Database: "db.example:5432/app"})
	if err != nil {
		panic(err) // no actions: New cannot refuse
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	apply(m, syncBatch(leases, loadedEvents()))
	return m, clock
}

// BenchmarkScaleLoad is the model's first picture of 100,000 leases: the
// resync batch applied and the rows built (the database read is in
// monitor's BenchmarkScaleSnapshotLoad).
func BenchmarkScaleLoad(b *testing.B) {
	leases := scaleLeaseSet(scaleLeases)
	var m *Model
	b.ReportAllocs()
	for b.Loop() {
		m, _ = scaleModel(leases, 200, 50)
	}
	if got := len(m.rows); got != scaleLeases {
		b.Fatalf("model has %d rows, want %d", got, scaleLeases)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	runtime.KeepAlive(m)
}

// BenchmarkScaleFrame renders one frame of a model holding 100,000 leases:
// only the visible rows are drawn.
func BenchmarkScaleFrame(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			m, _ := scaleModel(scaleLeaseSet(scaleLeases), size[0], size[1])
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkScaleTick is what the screen costs while nothing changes: one
// countdown tick (4 a second by default) and the frame it redraws.
func BenchmarkScaleTick(b *testing.B) {
	m, clock := scaleModel(scaleLeaseSet(scaleLeases), 200, 50)
	b.ReportAllocs()
	for b.Loop() {
		clock.Advance(m.cfg.Tick)
		m.Update(tickMsg(clock.t))
		_ = m.View()
	}
}

// BenchmarkScaleBatch is one batch from the feed applied to a model holding
// 100,000 leases, and the frame after it: one ownership transition, and the
// once-a-second delta read that found no renewal (what the monitor does
// every second while nothing changes). At this size a batch waits for the
// next tick (holdBatch), so each iteration is the batch, then the tick that
// applies it, then the frame.
func BenchmarkScaleBatch(b *testing.B) {
	leases := scaleLeaseSet(scaleLeases)
	b.Run("one-transition", func(b *testing.B) {
		m, clock := scaleModel(leases, 200, 50)
		id := int64(1000)
		b.ReportAllocs()
		for b.Loop() {
			id++
			l := leases[id%scaleLeases]
			ev := data.Event{ID: id, Kind: data.KindTakenOver, At: server, Key: l.Key, RunID: run(byte(id)), PrevRunID: l.RunID,
				Fence: scaleLeases + id, PrevFence: l.Fence, ExpiresAt: server.Add(15 * time.Second)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			m.Update(tickMsg(clock.t))
			_ = m.View()
		}
	})
	b.Run("empty-delta", func(b *testing.B) {
		m, clock := scaleModel(leases, 200, 50)
		b.ReportAllocs()
		for b.Loop() {
			snap := data.Snapshot{Clock: data.NewClock(server, clock.t, clock.t)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Delta: &snap, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			m.Update(tickMsg(clock.t))
			_ = m.View()
		}
	})
}
