package ui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// BenchmarkScaleTimeline is the timeline at 100,000 leases: opening it (the
// key, the history read's answer for the lanes on screen applied, the
// frame), a scrub step (the key, the owners' answer, the frame) and a live
// frame. The database reads are outside (data's history benchmarks); the
// answers here are what they return for the lanes: 30 events a lane.
//
//	go test ./ui -run '^$' -bench ScaleTimeline
func BenchmarkScaleTimeline(b *testing.B) {
	leases := scaleLeaseSet(scaleLeases)
	byKey := map[data.Key]data.Lease{}
	for _, l := range leases {
		byKey[l.Key] = l
	}
	sorted := make([]data.Key, 0, len(leases))
	for _, l := range leases {
		sorted = append(sorted, l.Key)
	}
	slices.SortFunc(sorted, keyOrder)
	hist := func(q LanesQuery) (History, error) {
		keys, more := pageOf(sorted, q.Sessions)
		since, until := q.Since, q.Until
		h := History{Keys: mkeys(keys), More: more, Start: Owners{Leases: map[monitor.Key]data.Lease{}}}
		step := until.Sub(since) / 31
		for i, k := range keys {
			l := byKey[k]
			h.Start.Leases[mkey(k)] = l
			for j := range 30 {
				h.Events = append(h.Events, data.Event{ID: int64(i*100 + j + 1), Kind: data.KindTakenOver, At: since.Add(time.Duration(j+1) * step),
					Key: k, RunID: run(byte(j)), Fence: int64(j + 2), Holder: "device-x", ExpiresAt: since.Add(time.Duration(j+2) * step)})
			}
		}
		return h, nil
	}
	owners := func(keys []monitor.Key, at time.Time) (Owners, error) {
		o := Owners{Leases: map[monitor.Key]data.Lease{}}
		for _, k := range keys {
			o.Leases[k] = byKey[k.Key]
		}
		return o, nil
	}
	setup := func() *Model {
		m, _ := scaleModel(leases, 200, 50)
		m.cfg.Source.TimelineFunc, m.cfg.Source.OwnersAtFunc = hist, owners
		return m
	}
	b.Run("open", func(b *testing.B) {
		m := setup()
		b.ReportAllocs()
		for b.Loop() {
			m.closeTimeline()
			m.tl.loaded, m.tl.asked = nil, historyQuery{} // nothing read yet
			drain(m, press(m, "t"))
			if strings.Contains(ansi.Strip(m.View().Content), "reading the history") {
				b.Fatal("the timeline is still reading after its answer")
			}
		}
	})
	b.Run("scrub-step", func(b *testing.B) {
		m := setup()
		drain(m, press(m, "t"))
		_ = m.View()
		b.ReportAllocs()
		for b.Loop() {
			drain(m, press(m, "h"))
			_ = m.View()
			if !m.tl.scrubbed {
				b.Fatal("not scrubbed")
			}
			if m.tl.cursor.Before(m.tlNow().Add(-10 * time.Minute)) {
				press(m, "esc")
			}
		}
	})
	b.Run("live-frame", func(b *testing.B) {
		m := setup()
		drain(m, press(m, "t"))
		b.ReportAllocs()
		for b.Loop() {
			_ = m.View()
		}
	})
	// A tick while the fleet renews: a delta read renewing 1,000 leases
	// (none of them a lane), the tick that merges and the frame; the lanes
	// are not rebuilt for renewals elsewhere.
	b.Run("live-tick-renewals", func(b *testing.B) {
		m := setup()
		clock := &fixedClock{t: base}
		m.cfg.Now = clock.Now
		drain(m, press(m, "t"))
		_ = m.View()
		lanes := map[monitor.Key]bool{}
		for _, k := range m.tl.keys {
			lanes[k] = true
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			clock.Advance(m.cfg.Tick)
			var renewed []data.Lease
			for len(renewed) < 1000 {
				l := leases[i%len(leases)]
				i += 97
				if lanes[mkey(l.Key)] {
					continue
				}
				l.RenewedAt, l.ExpiresAt = server.Add(clock.t.Sub(base)), server.Add(clock.t.Sub(base)+time.Hour)
				renewed = append(renewed, l)
			}
			snap := data.Snapshot{Leases: renewed, Clock: data.NewClock(server.Add(clock.t.Sub(base)), clock.t, clock.t)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Delta: &snap, At: clock.t}}, Conn: data.ListenerState{Status: data.ListenerLive}})
			m.Update(tickMsg(clock.t))
			_ = m.View()
		}
	})
}
