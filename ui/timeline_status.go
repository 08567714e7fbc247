package ui

import "time"

// TimelineStatus is what the timeline view shows, for a program that times
// it: the benchmark (internal/bench's timeline workload) measures the key
// that opens it to the first frame with the lanes drawn, and a scrub step's
// key to the frame with the cursor moved and who held each lane then.
type TimelineStatus struct {
	// Open says the timeline is the view shown.
	Open bool
	// Lanes is how many sessions have a lane on screen.
	Lanes int
	// Read says the lanes' history is read: the frame draws their bars, not
	// "reading the history…".
	Read bool
	// Events is how many events of the lanes the view holds (read, and
	// merged from the feed since).
	Events int
	// Scrubbed says the cursor is in the past, at Cursor.
	Scrubbed bool
	Cursor   time.Time
	// HeldRead says, when scrubbed, that who held each lane at Cursor is
	// read: the frame's right column answers for the cursor.
	HeldRead bool
	// Err is a failed read's error (history or owners), nil when none.
	Err error
}

// Timeline returns the timeline view's status. Like View, it must be called
// from the program's goroutine.
func (m *Model) Timeline() TimelineStatus {
	st := TimelineStatus{Open: m.mode == modeTimeline, Lanes: len(m.tl.keys), Scrubbed: m.tl.scrubbed, Err: m.tl.loadErr}
	if d := m.tl.loaded; d != nil {
		st.Read = d.q.page == m.tl.page
		st.Events = len(d.events)
	}
	if m.tl.scrubbed {
		st.Cursor = m.tl.cursor
		st.HeldRead = m.tl.ownersOK && m.tl.ownersAt.Equal(m.tl.cursor)
		if st.Err == nil && m.tl.ownersOK {
			st.Err = m.tl.ownErr
		}
	}
	return st
}
