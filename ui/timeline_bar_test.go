package ui

import (
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/theme"
)

// TestCursorSlicesAsTruncateMeasures: the cursor drawn over each column of
// lanes by slicing their indexed text shows exactly what measuring the
// text (ansi.Truncate, as before the index) shows, in every column: held
// spans with their labels, expiry, nobody, marks, the history kept's start
// and a capped read's end; a label with a wide rune falls back to
// measuring, and shows the same (a cursor on half of the wide rune then
// widens the line by one cell, as it always did).
func TestCursorSlicesAsTruncateMeasures(t *testing.T) {
	t.Parallel()
	t0 := server.Add(-100 * time.Second)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	k := data.Key{Account: "a", Session: "s"}
	st := newStyles(theme.Dark())
	w := window{from: t0, cell: time.Second, cells: 100}
	for _, c := range []struct {
		name    string
		holder  string
		indexed bool
	}{{"ascii label", "device-a", true}, {"wide label", "機器-a", false}} {
		evs := []data.Event{
			{ID: 1, Kind: data.KindAcquired, At: at(10), Key: k, RunID: run(1), Fence: 1, Holder: c.holder, ExpiresAt: at(25)},
			{ID: 2, Kind: data.KindTakenOver, At: at(30), Key: k, RunID: run(2), PrevRunID: run(1), Fence: 2, PrevFence: 1, Holder: "dev-b", ExpiresAt: at(45), PrevExpiresAt: at(25)},
			{ID: 3, Kind: data.KindRenewRejected, At: at(32), Key: k, RunID: run(1), Fence: 2},
			{ID: 4, Kind: data.KindForceReleased, At: at(50), Key: k, RunID: run(2), Fence: 2},
		}
		ln := monitor.BuildLane(monitor.LaneInput{Key: mkey(k), From: t0, Until: at(100), HistoryStart: at(5), Events: evs, ReadUntil: at(80)})
		bar := drawLane(&ln, w, &st.tl)
		if indexed := bar.cols != nil; indexed != c.indexed {
			t.Errorf("%s: columns indexed %v, want %v", c.name, indexed, c.indexed)
		}
		for col := range w.cells {
			got := withCursor(bar, &ln, w, col, &st.tl)
			want := ansi.Truncate(bar.text, col, "") + "\x1b[m" + st.tl.cursor.Render(cursorGlyph(&ln, w, col)) + ansi.TruncateLeft(bar.text, col+1, "")
			if ansi.Strip(got) != ansi.Strip(want) || (c.indexed && ansi.StringWidth(got) != w.cells) {
				t.Fatalf("%s, column %d:\n got  %q\n want %q", c.name, col, ansi.Strip(got), ansi.Strip(want))
			}
		}
	}
}
