package ui

import "testing"

// TestCursor: the one cursor the sessions table, the events pane and the
// devices pane share, on a list of n rows through a viewport of page rows.
func TestCursor(t *testing.T) {
	tests := []struct {
		name             string
		pos, top, n, pg  int
		do               func(c cursor)
		wantPos, wantTop int
	}{
		{"down inside the viewport", 2, 0, 10, 4, func(c cursor) { c.move(1) }, 3, 0},
		{"down off the bottom scrolls one", 3, 0, 10, 4, func(c cursor) { c.move(1) }, 4, 1},
		{"up off the top scrolls one", 4, 4, 10, 4, func(c cursor) { c.move(-1) }, 3, 3},
		{"page down", 0, 0, 10, 4, func(c cursor) { c.move(4) }, 4, 1},
		{"page up", 9, 6, 10, 4, func(c cursor) { c.move(-4) }, 5, 5},
		{"end stops at the last row", 0, 0, 10, 4, func(c cursor) { c.move(1 << 30) }, 9, 6},
		{"home stops at the first row", 9, 6, 10, 4, func(c cursor) { c.move(-1 << 30) }, 0, 0},
		{"a page larger than the list never scrolls", 1, 0, 3, 10, func(c cursor) { c.move(5) }, 2, 0},
		{"a zero page counts as one", 0, 0, 3, 0, func(c cursor) { c.move(1) }, 1, 1},
		{"move(0) puts a cursor past a shrunk list on its last row", 8, 6, 5, 4, func(c cursor) { c.move(0) }, 4, 1},
		{"follow keeps the row on the same screen line", 5, 3, 20, 4, func(c cursor) { c.follow(9) }, 9, 7},
		{"follow upward", 9, 7, 20, 4, func(c cursor) { c.follow(2) }, 2, 0},
		{"follow near the end stops scrolling at the end", 1, 0, 10, 4, func(c cursor) { c.follow(9) }, 9, 6},
		{"keepVisible scrolls back from past the end", 5, 8, 10, 4, func(c cursor) { c.keepVisible() }, 5, 5},
		{"keepVisible shows a cursor above the viewport", 1, 4, 10, 4, func(c cursor) { c.keepVisible() }, 1, 1},
		{"keepVisible leaves a visible cursor alone", 5, 3, 10, 4, func(c cursor) { c.keepVisible() }, 5, 3},
		{"reset", 7, 5, 10, 4, func(c cursor) { c.reset() }, 0, 0},
		{"empty list", 3, 2, 0, 4, func(c cursor) { c.move(1) }, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, top := tt.pos, tt.top
			tt.do(newCursor(&pos, &top, tt.n, tt.pg))
			if pos != tt.wantPos || top != tt.wantTop {
				t.Errorf("pos, top = %d, %d; want %d, %d", pos, top, tt.wantPos, tt.wantTop)
			}
		})
	}
}
