package bench

import (
	"testing"
	"time"
)

// TestHammerWindowCountsTheWindowsPart: four slots held back to back from
// before the window to after it are full all through it, whichever grant
// held them: the window counts every hold's part in it, the edges' too.
// (The hammer counted the whole holds of the grants whose first attempt
// began in the window: the grants its last waits would have made were
// missing, and slots always full read as 75 % here, with a wait of 2.5 s.)
func TestHammerWindowCountsTheWindowsPart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	end := start.Add(10 * time.Second)
	h := &hammer{}
	for slot := range hammerSlots {
		// Each slot's holds start at a different phase, so some straddle
		// the window's edges.
		for from := start.Add(-time.Second + time.Duration(slot)*70*time.Millisecond); from.Before(end.Add(time.Second)); from = from.Add(hammerHold) {
			h.holds = append(h.holds, hold{from: from, to: from.Add(hammerHold)})
		}
	}
	grants, held := h.window(start, end)
	if want := hammerSlots * end.Sub(start); held != want {
		t.Errorf("held %s of the window, want %s: every slot was held all through it", held, want)
	}
	if want := int64(hammerSlots * 40); grants != want {
		t.Errorf("%d grants in the window, want %d", grants, want)
	}
}
