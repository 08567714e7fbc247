package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// timelineModel is the loaded fixture with its history (pruned before
// pruned, if set), a burst of live events for the pulse, on the timeline;
// mutate changes the configuration further.
func timelineModel(t *testing.T, w, h int, pruned time.Time, mutate ...func(*Config)) (*Model, *fixedClock) {
	t.Helper()
	m, c := newModel(t, w, h, append([]func(*Config){withHistory(pruned)}, mutate...)...)
	// The burst comes before the sync that replaces its leases: it stays in
	// the pulse, not in the table.
	burst := data.Key{Account: "hooli", Session: "burst"}
	kinds := []data.Kind{data.KindAcquired, data.KindTakenOver, data.KindTakenOver, data.KindRenewRejected}
	for i := range 24 {
		at := base.Add(-time.Duration(120-i*5) * time.Second)
		n := 1 + i%3
		if i > 18 {
			n = 6 // the burst
		}
		for j := range n {
			id := int64(5000 + i*10 + j)
			ev := data.Event{ID: id, Kind: kinds[(i+j)%len(kinds)], At: at, Key: burst, RunID: run(byte(id)), Fence: id, ExpiresAt: at.Add(15 * time.Second)}
			apply(m, monitor.Batch{Items: []monitor.Item{{Event: &ev, At: at}}, Conn: data.ListenerState{Status: data.ListenerLive, Since: base.Add(-time.Minute)}})
		}
	}
	apply(m, syncBatch(loadedLeases(), loadedEvents()))
	pressDrain(m, "t")
	return m, c
}

// TestTimelineGolden: the timeline's screens at 150x40 and 80x24, live,
// zoomed in, scrubbed to a takeover, with the history pruned, a session
// that ended found by its id, and the first page with the sessions that
// ended in the window.
func TestTimelineGolden(t *testing.T) {
	t.Parallel()
	pruned := server.Add(-6 * time.Minute)
	tests := []struct {
		name   string
		pruned time.Time
		keys   []string
	}{
		{"live", time.Time{}, nil},
		{"zoomed", time.Time{}, []string{"+", "+", "+"}}, // 2 minutes
		{"scrubbed_takeover", time.Time{}, []string{"N", "N", "N", "N", "N"}},
		{"pruned_start", pruned, nil},
		// Found by id: a session released 20 s ago, whose lease the table
		// no longer shows.
		{"found_ended", time.Time{}, []string{"/", "s", "9", "enter"}},
		// The first page: acme's sessions, and hooli's two, released and
		// force-released in the window.
		{"first_page", time.Time{}, []string{"g"}},
	}
	for _, tt := range tests {
		for _, sz := range [][2]int{{150, 40}, {80, 24}} {
			t.Run(fmt.Sprintf("%s_%dx%d", tt.name, sz[0], sz[1]), func(t *testing.T) {
				m, _ := timelineModel(t, sz[0], sz[1], tt.pruned)
				pressDrain(m, tt.keys...)
				requireGolden(t, m, sz[0], sz[1])
			})
		}
	}
}

// TestPulseInTheCountsLine: from 130 columns the main screen's counts line
// carries the pulse too, once something happened in the last two minutes.
func TestPulseInTheCountsLine(t *testing.T) {
	t.Parallel()
	m, _ := timelineModel(t, 150, 40, time.Time{})
	pressDrain(m, "t") // back to the table
	if m.mode != modeMain {
		t.Fatalf("mode %v, want the table", m.mode)
	}
	requireGolden(t, m, 150, 40)
}
