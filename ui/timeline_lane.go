package ui

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// A lane is one session's ownership over a window of time, rebuilt from the
// history: who held it when (spans), and what happened (marks). It is a pure
// function of the history read for the window (buildLane), so it is tested
// without a database, and drawn by drawLane.

// spanKind is what a stretch of a lane shows.
type spanKind uint8

const (
	spanUnknown spanKind = iota // before the history kept (pruned): nobody knows
	spanNobody                  // known: no lease
	spanHeld                    // a run held it
	spanExpired                 // its holder's lease had run out, nobody took it over
)

// span is a stretch of a lane: [from, to).
type span struct {
	kind     spanKind
	from, to time.Time
	holder   string
	run      uuid.UUID
	fence    int64
}

// markKind is an event worth seeing on a lane, in the order marks win a
// cell they share (the highest first).
type markKind uint8

const (
	markNone      markKind = iota
	markOther              // a kind this monitor does not know (a newer schema's)
	markExpired            // a lease ran out and nobody took it over
	markHandover           // handed over to a successor
	markPreempted          // taken from its holder for a higher claim
	markTakeover           // taken over after it expired
	markZombie             // a renewal rejected: the old holder still ran
	markForced             // force-released by an operator
)

// Glyphs of the marks; every one a single cell, and each also in the legend,
// so a lane reads the same without colour.
var markGlyphs = [...]string{
	markNone: "", markOther: "•", markExpired: "†", markHandover: "⇄", markPreempted: "↯",
	markTakeover: "»", markZombie: "Z", markForced: "✖",
}

// Kinds other engineers add to lease.event; the lane knows their meaning by
// name, so it needs no data constant that may not exist yet.
const (
	kindPreempted  data.Kind = "preempted"
	kindHandedOver data.Kind = "handed_over"
)

// laneMark is one mark on a lane.
type laneMark struct {
	at   time.Time
	kind markKind
}

// lane is a session's spans, in time order and covering [from, until)
// without gaps, and its marks in time order.
type lane struct {
	key   data.Key
	spans []span
	marks []laneMark
	// known is where the history kept for the lane starts, if after the
	// window's start; zero when the whole window is known.
	known time.Time
	// cut is where the history read stopped at its cap, if before the
	// lane's end: from there the lane is unknown.
	cut time.Time
}

// laneInput is what buildLane needs for one session.
type laneInput struct {
	key         data.Key
	from, until time.Time
	// start is who held the session at the later of from and historyStart
	// (nil: nobody), with the expiry it had then, exact if startExact (else
	// unrecorded renewals may have extended it: unknown).
	start      *data.Lease
	startExact bool
	// historyStart is the oldest event kept; before it the lane is unknown.
	historyStart time.Time
	// events are the session's events after the start, oldest first.
	events []data.Event
	// live is the session's lease now, if any: it tells the current
	// holder's expiry (renewals write no event).
	live *data.Lease
	// readUntil, when not zero, is where the read of the history stopped
	// at its cap (History.ReadUntil): the lane is unknown from there.
	readUntil time.Time
}

// buildLane rebuilds a session's lane from its history.
func buildLane(in laneInput) lane {
	if cut := in.readUntil; !cut.IsZero() && cut.Before(in.until) {
		end := in.until
		in.readUntil, in.live = time.Time{}, nil // the live lease is not the cut's
		in.until = maxTime(cut, in.from)
		ln := buildLane(in)
		ln.cut = in.until
		ln.spans = append(ln.spans, span{kind: spanUnknown, from: in.until, to: end})
		return ln
	}
	ln := lane{key: in.key}
	t0 := in.from
	if in.historyStart.After(in.from) {
		ln.known = in.historyStart
		end := minTime(in.historyStart, in.until)
		ln.spans = append(ln.spans, span{kind: spanUnknown, from: in.from, to: end})
		t0 = end
	}
	if !t0.Before(in.until) {
		return ln
	}
	cur := span{kind: spanNobody, from: t0}
	// curExp is the current holder's expiry where the history pins it
	// exactly, else zero: renewals write no event, so an acquisition's
	// expiry is only the first of many. Exact are a takeover's previous
	// expiry, a release's, the live lease's and an exact start.
	var curExp time.Time
	if s := in.start; s != nil {
		cur = span{kind: spanHeld, from: t0, holder: s.Holder, run: s.RunID, fence: s.Fence}
		if in.startExact {
			curExp = s.ExpiresAt
		}
		if in.startExact && !curExp.After(t0) {
			cur.kind = spanExpired
		}
	}
	// closeAt ends the current span at t (at its expiry first, when it ran
	// out before t) and starts next.
	closeAt := func(t time.Time, next span) {
		t = clampTime(t, cur.from, in.until)
		if cur.kind == spanHeld && !curExp.IsZero() && curExp.Before(t) && curExp.After(cur.from) {
			ln.spans = append(ln.spans, withTo(cur, curExp))
			cur = span{kind: spanExpired, from: curExp, holder: cur.holder, run: cur.run, fence: cur.fence}
		}
		if t.After(cur.from) {
			ln.spans = append(ln.spans, withTo(cur, t))
		}
		next.from = t
		cur = next
	}
	holding := func(ev data.Event) span {
		return span{kind: spanHeld, holder: ev.Holder, run: ev.RunID, fence: ev.Fence}
	}
	for _, ev := range in.events {
		if ev.At.Before(t0) || ev.At.After(in.until) {
			continue
		}
		switch ev.Kind {
		case data.KindAcquired:
			closeAt(ev.At, holding(ev))
			curExp = time.Time{}
		case data.KindTakenOver, kindHandedOver, kindPreempted:
			curExp = ev.PrevExpiresAt // the holder it was taken from ran out then (exact)
			closeAt(ev.At, holding(ev))
			curExp = time.Time{}
			ln.marks = append(ln.marks, laneMark{ev.At, transitionMark(ev.Kind)})
		case data.KindReleased, data.KindForceReleased:
			if ev.RunID == cur.run && ev.Fence == cur.fence {
				curExp = ev.ExpiresAt // the row's expiry when it went (exact)
			}
			closeAt(ev.At, span{kind: spanNobody})
			curExp = time.Time{}
			if ev.Kind == data.KindForceReleased {
				ln.marks = append(ln.marks, laneMark{ev.At, markForced})
			}
		case data.KindRenewRejected:
			ln.marks = append(ln.marks, laneMark{ev.At, markZombie})
		case data.KindTruncated:
			curExp = time.Time{}
			closeAt(ev.At, span{kind: spanNobody})
			ln.marks = append(ln.marks, laneMark{ev.At, markOther})
		default:
			// A kind from a newer schema: a mark; and if it names a new
			// run with a higher fence, the session changed hands.
			ln.marks = append(ln.marks, laneMark{ev.At, markOther})
			if ev.RunID != uuid.Nil && ev.RunID != cur.run && ev.Fence > cur.fence && !ev.ExpiresAt.IsZero() {
				curExp = ev.PrevExpiresAt
				closeAt(ev.At, holding(ev))
				curExp = time.Time{}
			}
		}
	}
	if cur.kind == spanHeld && in.live != nil && in.live.RunID == cur.run && in.live.Fence == cur.fence {
		curExp = in.live.ExpiresAt // renewed since the event that started the span
	}
	if cur.kind == spanHeld && !curExp.IsZero() && curExp.Before(in.until) && curExp.After(cur.from) {
		ln.marks = append(ln.marks, laneMark{curExp, markExpired})
	}
	if cur.kind == spanHeld || cur.kind == spanExpired {
		closeAt(in.until, span{})
	} else if in.until.After(cur.from) {
		ln.spans = append(ln.spans, withTo(cur, in.until))
	}
	return ln
}

// transitionMark is the mark of an event that hands a session to a new run.
func transitionMark(k data.Kind) markKind {
	switch k {
	case kindHandedOver:
		return markHandover
	case kindPreempted:
		return markPreempted
	}
	return markTakeover
}

// at returns the span covering t, if the lane covers t.
func (ln *lane) at(t time.Time) (span, bool) {
	for _, s := range ln.spans {
		if !t.Before(s.from) && t.Before(s.to) {
			return s, true
		}
	}
	return span{}, false
}

func withTo(s span, to time.Time) span { s.to = to; return s }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}
