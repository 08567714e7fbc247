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
// ones below it as gaps, delivers a gap's row once when it appears, keeps
// asking for a gap while it is within the window, and gives it up after.
func TestPollCursor(t *testing.T) {
	c := pollCursor{window: 10}
	c.start([]int64{3, 4, 6, 9})
	if c.after != 9 || !slices.Equal(c.gapList(), []int64{1, 2, 5, 7, 8}) {
		t.Fatalf("start: after %d, gaps %v; want 9 and [1 2 5 7 8]", c.after, c.gapList())
	}
	evs, newer := c.advance(evIDs(5, 5, 10, 12))
	if got := ids(evs); !slices.Equal(got, []int64{5, 10, 12}) || newer != 2 {
		t.Fatalf("advance: delivered %v (%d newer), want [5 10 12] (2 newer)", got, newer)
	}
	if c.after != 12 || !slices.Equal(c.gapList(), []int64{7, 8, 11}) {
		t.Fatalf("after advance: after %d, gaps %v; want 12 and [7 8 11] (1 and 2 out of the window)", c.after, c.gapList())
	}
	if evs, _ := c.advance(evIDs(11, 12)); !slices.Equal(ids(evs), []int64{11}) {
		t.Fatalf("advance: delivered %v, want only the gap 11 (12 was delivered)", ids(evs))
	}
	c.advance(evIDs(25))
	if !slices.Equal(c.gapList(), []int64{16, 17, 18, 19, 20, 21, 22, 23, 24}) {
		t.Fatalf("gaps %v, want only those within 10 of 25", c.gapList())
	}
	// A new primary moves the ids 2^43 on: the ids between are not gaps to
	// list one by one (that would never end), only those within the window.
	const jump = 25 + 1<<43
	evs, _ = c.advance(evIDs(24, jump-3, jump))
	if got := ids(evs); !slices.Equal(got, []int64{24, jump - 3, jump}) {
		t.Fatalf("advance across the jump: delivered %v", got)
	}
	if c.after != jump || !slices.Equal(c.gapList(), []int64{jump - 9, jump - 8, jump - 7, jump - 6, jump - 5, jump - 4, jump - 2, jump - 1}) {
		t.Fatalf("after the jump: after %d, gaps %v; want %d and the 8 missing ids within 10 of it", c.after, c.gapList(), int64(jump))
	}
}

func ids(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
