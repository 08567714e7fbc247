package demo

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/termtext"
)

// Line is one line of the demo's event stream. Text is safe for a terminal:
// every value that came from the database or a device was passed through
// termtext.Clean.
type Line struct {
	// At is the time since the demo started.
	At time.Duration
	// Time is when it happened, on the local clock.
	Time time.Time
	// Tag says what happened, in a word or two ("taken over", "CHAOS").
	Tag string
	// Text is the rest of the line.
	Text string
	// Chaos marks what the chaos schedule or a demo key did.
	Chaos bool
	// Short says it in a few words, for a status bar (chaos lines only).
	Short string
}

// String formats the line for the headless event stream.
func (l Line) String() string {
	return fmt.Sprintf("%7.2fs  %-16s %s", l.At.Seconds(), l.Tag, l.Text)
}

// Sentence says the line as one sentence for a status bar, the action
// first: a chaos line's tag names the action ("CHAOS kill -9") and its text
// goes on from there ("phone pid 16663, which holds …"), so the text alone
// would not say what was done.
func (l Line) Sentence() string {
	action := strings.TrimSpace(strings.TrimPrefix(l.Tag, "CHAOS"))
	if action == "" {
		return l.Text
	}
	return action + " " + l.Text
}

// Observer receives the event stream. It is called from the demo's loop
// goroutine and must not block for long.
type Observer func(Line)

// clean makes an untrusted value (a holder label, a reason, an error) inert
// and at most 80 cells wide.
func clean(s string) string { return termtext.Clean(s, 80) }

// short is a run id's first 8 hex digits, as the monitor shows it.
func short(id uuid.UUID) string { return id.String()[:8] }
