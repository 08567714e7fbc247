package monitor

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// TestSweepSlices: a table of 10 pages read 4 a read goes [0,4), [4,8),
// [8,end), round and round; each slice's read starts where that slice's
// previous read ended, not where the last read of another slice did (a
// renewal in pages [0,4) made while [4,8) is read is read by the next
// [0,4)); a slice not read since a resync starts at the resync; a whole
// pass's time is the age it reports; a table that fits one read is read
// whole each time and reports no age.
func TestSweepSlices(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	w := sweep{size: 4}
	w.reset(sec(0))
	var got []data.Pages
	var starts []time.Time
	for i := range 7 {
		if w.startsPass() {
			w.pages = 10
		}
		p, since := w.slice()
		got, starts = append(got, p), append(starts, since)
		w.read(p, sec(10+i), sec(10+i))
	}
	want := []data.Pages{{From: 0, To: 4}, {From: 4, To: 8}, {From: 8, To: -1}, {From: 0, To: 4}, {From: 4, To: 8}, {From: 8, To: -1}, {From: 0, To: 4}}
	wantStarts := []time.Time{sec(0), sec(0), sec(0), sec(10), sec(11), sec(12), sec(13)}
	for i := range want {
		if got[i] != want[i] || !starts[i].Equal(wantStarts[i]) {
			t.Errorf("read %d: pages %v from %v, want %v from %v", i, got[i], starts[i].Sub(t0), want[i], wantStarts[i].Sub(t0))
		}
	}
	if age := w.age(); age != 3*time.Second {
		t.Errorf("age %v, want a pass's 3s (from a read of a slice to its next)", age)
	}
	w.reset(sec(20))
	if w.pages = 10; true {
		if p, since := w.slice(); p != (data.Pages{From: 0, To: 4}) || !since.Equal(sec(20)) {
			t.Errorf("after a resync: %v from %v, want [0,4) from the resync", p, since.Sub(t0))
		}
	}

	small := sweep{size: 4}
	small.reset(sec(0))
	for i := range 3 {
		if small.startsPass() {
			small.pages = 3
		}
		p, since := small.slice()
		if p != (data.Pages{From: 0, To: -1}) || (i > 0 && !since.Equal(sec(i))) {
			t.Errorf("a table of 3 pages, read %d: %v from %v, want all of it from the previous read", i, p, since.Sub(t0))
		}
		small.read(p, sec(i+1), sec(i+1))
	}
	if small.age() != 0 {
		t.Errorf("a table read whole each time reports age %v, want 0", small.age())
	}
}
