package data

import (
	"slices"
	"testing"
)

func evIDs(ids ...int64) []Event {
	evs := make([]Event, len(ids))
	for i, id := range ids {
		evs[i] = Event{ID: id}
	}
	return evs
}

// TestPollCursor: the cursor starts after the newest id with the missing
// ones below it (within the window) as gaps, delivers a gap's row once when
// it appears, and keeps asking for a gap however far the ids move on, until
// a read's snapshot shows that every transaction that could fill it has
// ended (its xmin has reached the bound taken by the read after the gap was
// found). Before, a gap more than the window below the newest id was given
// up while its transaction could still commit.
func TestPollCursor(t *testing.T) {
	busy := pollSnapshot{xmin: 100, next: 200} // transaction 100 is still open
	c := pollCursor{window: 10}
	c.start([]int64{3, 4, 6, 9})
	if c.after != 9 || !slices.Equal(c.gapList(), []int64{1, 2, 5, 7, 8}) {
		t.Fatalf("start: after %d, gaps %v; want 9 and [1 2 5 7 8]", c.after, c.gapList())
	}
	evs, newer := c.advance(evIDs(5, 5, 10, 12), busy)
	if got := ids(evs); !slices.Equal(got, []int64{5, 10, 12}) || newer != 2 {
		t.Fatalf("advance: delivered %v (%d newer), want [5 10 12] (2 newer)", got, newer)
	}
	if c.after != 12 || !slices.Equal(c.gapList(), []int64{1, 2, 7, 8, 11}) {
		t.Fatalf("after advance: after %d, gaps %v; want 12 and [1 2 7 8 11]", c.after, c.gapList())
	}
	if evs, _ := c.advance(evIDs(11, 12), busy); !slices.Equal(ids(evs), []int64{11}) {
		t.Fatalf("advance: delivered %v, want only the gap 11 (12 was delivered)", ids(evs))
	}
	// Far more than the window goes by while transaction 100 stays open:
	// every gap is kept, and the new ones are listed.
	c.advance(evIDs(13, 40), busy)
	want := []int64{1, 2, 7, 8}
	for id := int64(14); id < 40; id++ {
		want = append(want, id)
	}
	if !slices.Equal(c.gapList(), want) {
		t.Fatalf("gaps %v, want %v: none given up while a transaction that may fill it is open", c.gapList(), want)
	}
	// Every transaction before 200 has ended: the gaps bounded by 200 are
	// given up, not those found by the last read (their bound is this
	// read's next id), and a gap filled by the same read is delivered.
	evs, _ = c.advance(evIDs(7), pollSnapshot{xmin: 250, next: 260})
	if !slices.Equal(ids(evs), []int64{7}) {
		t.Fatalf("delivered %v, want the gap 7", ids(evs))
	}
	if got := c.gapList(); len(got) != 40-14 || got[0] != 14 {
		t.Fatalf("gaps %v, want only those the last read found (14..39)", got)
	}
	c.advance(nil, pollSnapshot{xmin: 259, next: 270})
	if len(c.gapList()) != 40-14 {
		t.Fatalf("gaps %v given up before xmin reached their bound 260", c.gapList())
	}
	c.advance(nil, pollSnapshot{xmin: 260, next: 270})
	if len(c.gapList()) != 0 {
		t.Fatalf("gaps %v, want none: every transaction that could fill them has ended", c.gapList())
	}
	// A new primary moves the ids 2^43 on: the ids between are not gaps to
	// list one by one (that would never end), only those missing after the
	// failover.
	const base = 1 << 43
	evs, _ = c.advance(evIDs(base+3, base+5), busy)
	if got := ids(evs); !slices.Equal(got, []int64{base + 3, base + 5}) {
		t.Fatalf("advance across the jump: delivered %v", got)
	}
	if c.after != base+5 || !slices.Equal(c.gapList(), []int64{base + 1, base + 2, base + 4}) {
		t.Fatalf("after the jump: after %d, gaps %v; want %d and the 3 missing ids after the failover", c.after, c.gapList(), int64(base+5))
	}
}

func ids(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
