package ui

// cursor is the cursor of one of the model's lists (the sessions table, the
// events pane, the devices pane): n rows seen through a viewport of page
// rows. It points at the model's own two fields, *pos (the row under the
// cursor) and *top (the first row on screen), so that the views keep reading
// those, and holds the rules every list shares: the cursor stays on a row,
// the viewport scrolls only as far as it must to show the cursor, and never
// past the end, where it would show blank lines with rows above unseen.
type cursor struct {
	pos, top *int
	n, page  int
}

// newCursor returns the cursor over pos and top for n rows and a viewport of
// page rows (at least one).
func newCursor(pos, top *int, n, page int) cursor {
	return cursor{pos: pos, top: top, n: n, page: max(page, 1)}
}

// reset puts the cursor and the viewport on the first row.
func (c cursor) reset() { *c.pos, *c.top = 0, 0 }

// move moves the cursor by delta rows, stopping at the first and the last,
// and scrolls to keep it on screen. Page keys move by ±page, home and end by
// more than any list holds.
func (c cursor) move(delta int) {
	*c.pos = *c.pos + delta
	c.clampPos()
	c.keepVisible()
}

// follow moves the cursor to row i, where the row it was on now is, and
// scrolls by as much, so that the row stays on the same line of the screen
// (as far as the ends of the list allow).
func (c cursor) follow(i int) {
	*c.top += i - *c.pos
	*c.pos = i
	c.keepVisible()
}

// clampPos puts the cursor back on a row when the list shrank under it.
func (c cursor) clampPos() { *c.pos = min(max(*c.pos, 0), max(c.n-1, 0)) }

// keepVisible scrolls the viewport as little as it must to show the cursor's
// row, then back from past the end of the list.
func (c cursor) keepVisible() {
	if *c.pos < *c.top {
		*c.top = *c.pos
	}
	if *c.pos >= *c.top+c.page {
		*c.top = *c.pos - c.page + 1
	}
	*c.top = min(max(*c.top, 0), max(c.n-c.page, 0))
}
