package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// TestColumnsFitTheirContent: account, session and holder are as wide as
// their widest value shown (at least their title; account and session at
// most maxFlex, the holder at most what is left), and what no value needs
// stays blank at the right; at 150 columns six-character values no longer
// get 33 and 37 cells while holder labels are cut.
func TestColumnsFitTheirContent(t *testing.T) {
	t.Parallel()
	widths := func(w int, account, session, holder int16) map[colID]int {
		got := map[colID]int{}
		for _, c := range tableColumns(w, colWidths{colAccount: account, colSession: session, colHolder: holder}) {
			got[c.id] = c.width
		}
		return got
	}
	tests := []struct {
		name                       string
		width                      int
		account, session, holder   int16
		wantAcct, wantSess, wantHo int
	}{
		{"demo at 150", 150, 6, 6, 17, 7, 7, 17},
		{"long session at 150", 150, 6, 30, 17, 7, 30, 17},
		{"a long holder label at 150", 150, 6, 6, 120, 7, 7, 150 - 2 - 7 - 7 - 8 - 6 - 15 - 6 - 7 - 7},
		{"overlong values are capped", 200, 90, 90, 90, maxFlex, maxFlex, 200 - 2 - 2*maxFlex - 8 - 6 - 15 - 6 - 7 - 7},
		// The ages go, and the TTL's bar, before labels are cut below
		// spareLabel cells.
		{"tight: shared fairly", 80, 8, 27, 35, 8, spareLabel, spareLabel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := widths(tt.width, tt.account, tt.session, tt.holder)
			if got[colAccount] != tt.wantAcct || got[colSession] != tt.wantSess || got[colHolder] != tt.wantHo {
				t.Errorf("tableColumns(%d) account, session, holder = %d, %d, %d; want %d, %d, %d",
					tt.width, got[colAccount], got[colSession], got[colHolder], tt.wantAcct, tt.wantSess, tt.wantHo)
			}
		})
	}
}

// TestColumnsFollowTheRowsShown: a long session id scrolled into view, or
// arriving, widens its column, and the rows drawn before are drawn again in
// the new columns (the row cache is keyed on them).
func TestColumnsFollowTheRowsShown(t *testing.T) {
	t.Parallel()
	long := "conversation-" + strings.Repeat("x", 20)
	col := func(line, sub string) int { return len([]rune(line[:strings.Index(line, sub)])) } // in cells
	holderAt := func(s string) int {
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "HOLDER") {
				return col(line, "HOLDER")
			}
		}
		return -1
	}
	check := func(t *testing.T, before, after string) {
		t.Helper()
		if !strings.Contains(after, long+" ") {
			t.Fatalf("the long session id is cut or missing:\n%s", after)
		}
		if holderAt(after) != holderAt(before)+len(long)-len("SESSION") {
			t.Errorf("HOLDER moved from column %d to %d; want the session column as wide as %q", holderAt(before), holderAt(after), long)
		}
		for _, line := range strings.Split(after, "\n")[2:] {
			if strings.Contains(line, " dev ") && col(line, " dev ")+1 != holderAt(after) {
				t.Errorf("a row drawn before keeps its old columns: %q", line)
			}
		}
	}
	t.Run("scrolled", func(t *testing.T) {
		m, _ := newModel(t, 120, 8) // five rows shown
		leases := manyLeases(8)
		leases[7].Session = long // sorts last: the most time left
		apply(m, syncBatch(leases, nil))
		before := screen(m)
		if strings.Contains(before, long) {
			t.Fatalf("the last row is already on screen; the test needs it below:\n%s", before)
		}
		press(m, "G")
		check(t, before, screen(m))
	})
	t.Run("arriving", func(t *testing.T) {
		m, _ := newModel(t, 120, 12)
		apply(m, syncBatch(manyLeases(3), nil))
		before := screen(m)
		apply(m, monitor.Batch{Items: []monitor.Item{{Event: &data.Event{ID: 1, Kind: data.KindAcquired,
			Key: data.Key{Account: "acct", Session: long}, RunID: run(9), Fence: 9, At: server, ExpiresAt: server.Add(time.Hour)}, At: base}},
			Conn: data.ListenerState{Status: data.ListenerLive}})
		check(t, before, screen(m))
	})
}

// TestTimedColumnsAreMarked: a column whose cell reads otherwise when only
// the time moves must be timed, or the row cache would keep showing its
// old text; this holds whatever order the columns are declared in.
func TestTimedColumnsAreMarked(t *testing.T) {
	m, _ := newModel(t, 120, 40)
	l := cacheLeases(1)[0]
	now := l.RenewedAt
	for _, spec := range colSpecs() {
		c := column{colSpec: spec, width: max(spec.want, spec.min, 12)}
		moved := false
		for _, later := range []time.Duration{time.Second, time.Minute, time.Hour} {
			if m.tableCell(c, &l, 0.5, false, now, data.PendingAsk{}) != m.tableCell(c, &l, 0.5, false, now.Add(later), data.PendingAsk{}) {
				moved = true
			}
		}
		if moved != spec.timed {
			t.Errorf("column %s: its cell changes with the time: %v, but timed is %v", spec.title, moved, spec.timed)
		}
	}
}

// TestNarrowColumnsKeepRunAndFence: as the terminal narrows the ages go
// first (renewed, then held), then who waits (queue, ask), the holder, the
// run, and the fence last (before, at 80 columns the demo cut its
// holder labels, and a narrower table dropped the run and fence before
// the holder); at the demo's 80 columns its holder labels show whole.
func TestNarrowColumnsKeepRunAndFence(t *testing.T) {
	t.Parallel()
	order := []colID{colRenewed, colHeld, colQueue, colAsk, colHolder, colRun, colFence}
	content := colWidths{colAccount: 6, colSession: 6, colHolder: 17, colQueue: 1, colAsk: 14}
	for w := 160; w >= 20; w-- {
		shown := map[colID]bool{}
		for _, c := range tableColumns(w, content) {
			shown[c.id] = true
		}
		for i, id := range order {
			for _, later := range order[i+1:] {
				if shown[id] && !shown[later] {
					t.Errorf("at %d columns %s is hidden but %s, which goes before it, is shown", w, colSpecs()[later].title, colSpecs()[id].title)
				}
			}
		}
		if !shown[colTTL] || !shown[colAccount] || !shown[colSession] {
			t.Errorf("at %d columns account, session or TTL is hidden", w)
		}
	}
	demo := colWidths{colAccount: 6, colSession: 6, colHolder: 17}
	for _, c := range tableColumns(80, demo) {
		if c.id == colHolder && c.width < 17 {
			t.Errorf("at 80 columns the demo's 17-cell holder labels get %d cells", c.width)
		}
	}
	cols := map[colID]bool{}
	for _, c := range tableColumns(80, demo) {
		cols[c.id] = true
	}
	if !cols[colRun] || !cols[colFence] {
		t.Errorf("at 80 columns the demo's table has no run or fence column: %v", cols)
	}
}
