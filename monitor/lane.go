package monitor

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
)

// A Lane is one session's ownership over a window of time, rebuilt from the
// history: who held it when (spans), and what happened (marks). It is a pure
// function of the history read for the window (BuildLane), so it is tested
// without a database; the ui's timeline draws it.

// SpanKind is what a stretch of a lane shows.
type SpanKind uint8

const (
	SpanUnknown SpanKind = iota // before the history kept (pruned): nobody knows
	SpanNobody                  // known: no lease
	SpanHeld                    // a run held it
	SpanExpired                 // its holder's lease had run out, nobody took it over
)

// Span is a stretch of a lane: [From, To), and the run that held the
// session then (SpanHeld, SpanExpired).
type Span struct {
	Kind     SpanKind
	From, To time.Time
	Holder   string
	Run      uuid.UUID
	Fence    int64
}

// MarkKind is an event worth seeing on a lane, in the order marks win a
// cell they share (the highest first).
type MarkKind uint8

const (
	MarkNone      MarkKind = iota
	MarkOther              // a kind this monitor does not know (a newer schema's)
	MarkExpired            // a lease ran out and nobody took it over
	MarkHandover           // handed over to a successor
	MarkPreempted          // taken from its holder for a higher claim
	MarkTakeover           // taken over after it expired
	MarkZombie             // a renewal rejected: the old holder still ran
	MarkForced             // force-released by an operator
	NumMarks               // the number of mark kinds (for arrays by kind)
)

// Mark is one mark on a lane.
type Mark struct {
	At   time.Time
	Kind MarkKind
}

// Lane is a session's spans, in time order and covering [From, Until) of
// its LaneInput without gaps, and its marks in time order.
type Lane struct {
	Key   Key
	Spans []Span
	Marks []Mark
	// Known is where the history kept for the lane starts, if after the
	// window's start; zero when the whole window is known.
	Known time.Time
	// Cut is where the history read stopped at its cap, if before the
	// lane's end: from there the lane is unknown.
	Cut time.Time
}

// LaneInput is what BuildLane needs for one session.
type LaneInput struct {
	Key         Key
	From, Until time.Time
	// Start is who held the session at the later of From and HistoryStart
	// (nil: nobody), with the expiry it had then, exact if StartExact (else
	// unrecorded renewals may have extended it: unknown).
	Start      *data.Lease
	StartExact bool
	// HistoryStart is the oldest event kept; before it the lane is unknown.
	HistoryStart time.Time
	// Events are the session's events after the start, oldest first.
	Events []data.Event
	// Live is the session's lease now, if any: it tells the current
	// holder's expiry (renewals write no event).
	Live *data.Lease
	// ReadUntil, when not zero, is where the read of the history stopped
	// at its cap: the lane is unknown from there.
	ReadUntil time.Time
}

// BuildLane rebuilds a session's lane from its history: acquired,
// taken_over, preempted and handed_over start a span of their run;
// released and force_released end it, as a TRUNCATE ends every span; a
// span whose expiry the history pins (a takeover's previous expiry, a
// release's, the live lease's) turns expired there; a kind this code does
// not know is a mark, and a change of hands if it names a new run with a
// higher fence.
func BuildLane(in LaneInput) Lane {
	if cut := in.ReadUntil; !cut.IsZero() && cut.Before(in.Until) {
		end := in.Until
		in.ReadUntil, in.Live = time.Time{}, nil // the live lease is not the cut's
		in.Until = maxTime(cut, in.From)
		ln := BuildLane(in)
		ln.Cut = in.Until
		ln.Spans = append(ln.Spans, Span{Kind: SpanUnknown, From: in.Until, To: end})
		return ln
	}
	ln := Lane{Key: in.Key}
	t0 := in.From
	if in.HistoryStart.After(in.From) {
		ln.Known = in.HistoryStart
		end := minTime(in.HistoryStart, in.Until)
		ln.Spans = append(ln.Spans, Span{Kind: SpanUnknown, From: in.From, To: end})
		t0 = end
	}
	if !t0.Before(in.Until) {
		return ln
	}
	cur := Span{Kind: SpanNobody, From: t0}
	// curExp is the current holder's expiry where the history pins it
	// exactly, else zero: renewals write no event, so an acquisition's
	// expiry is only the first of many. Exact are a takeover's previous
	// expiry, a release's, the live lease's and an exact start.
	var curExp time.Time
	if s := in.Start; s != nil {
		cur = Span{Kind: SpanHeld, From: t0, Holder: s.Holder, Run: s.RunID, Fence: s.Fence}
		if in.StartExact {
			curExp = s.ExpiresAt
		}
		if in.StartExact && !curExp.After(t0) {
			cur.Kind = SpanExpired
		}
	}
	// closeAt ends the current span at t (at its expiry first, when it ran
	// out before t) and starts next.
	closeAt := func(t time.Time, next Span) {
		t = clampTime(t, cur.From, in.Until)
		if cur.Kind == SpanHeld && !curExp.IsZero() && curExp.Before(t) && curExp.After(cur.From) {
			ln.Spans = append(ln.Spans, withTo(cur, curExp))
			cur = Span{Kind: SpanExpired, From: curExp, Holder: cur.Holder, Run: cur.Run, Fence: cur.Fence}
		}
		if t.After(cur.From) {
			ln.Spans = append(ln.Spans, withTo(cur, t))
		}
		next.From = t
		cur = next
	}
	holding := func(ev data.Event) Span {
		return Span{Kind: SpanHeld, Holder: ev.Holder, Run: ev.RunID, Fence: ev.Fence}
	}
	for _, ev := range in.Events {
		if ev.At.Before(t0) || ev.At.After(in.Until) {
			continue
		}
		switch ev.Kind {
		case data.KindAcquired:
			closeAt(ev.At, holding(ev))
			curExp = time.Time{}
		case data.KindTakenOver, data.KindHandedOver, data.KindPreempted:
			curExp = ev.PrevExpiresAt // the holder it was taken from ran out then (exact)
			closeAt(ev.At, holding(ev))
			curExp = time.Time{}
			ln.Marks = append(ln.Marks, Mark{ev.At, transitionMark(ev.Kind)})
		case data.KindReleased, data.KindForceReleased:
			if ev.RunID == cur.Run && ev.Fence == cur.Fence {
				curExp = ev.ExpiresAt // the row's expiry when it went (exact)
			}
			closeAt(ev.At, Span{Kind: SpanNobody})
			curExp = time.Time{}
			if ev.Kind == data.KindForceReleased {
				ln.Marks = append(ln.Marks, Mark{ev.At, MarkForced})
			}
		case data.KindRenewRejected:
			ln.Marks = append(ln.Marks, Mark{ev.At, MarkZombie})
		case data.KindTruncated:
			curExp = time.Time{}
			closeAt(ev.At, Span{Kind: SpanNobody})
			ln.Marks = append(ln.Marks, Mark{ev.At, MarkOther})
		default:
			// A kind from a newer schema: a mark; and if it names a new
			// run with a higher fence, the session changed hands.
			ln.Marks = append(ln.Marks, Mark{ev.At, MarkOther})
			if ev.RunID != uuid.Nil && ev.RunID != cur.Run && ev.Fence > cur.Fence && !ev.ExpiresAt.IsZero() {
				curExp = ev.PrevExpiresAt
				closeAt(ev.At, holding(ev))
				curExp = time.Time{}
			}
		}
	}
	if cur.Kind == SpanHeld && in.Live != nil && in.Live.RunID == cur.Run && in.Live.Fence == cur.Fence {
		curExp = in.Live.ExpiresAt // renewed since the event that started the span
	}
	if cur.Kind == SpanHeld && !curExp.IsZero() && curExp.Before(in.Until) && curExp.After(cur.From) {
		ln.Marks = append(ln.Marks, Mark{curExp, MarkExpired})
	}
	if cur.Kind == SpanHeld || cur.Kind == SpanExpired {
		closeAt(in.Until, Span{})
	} else if in.Until.After(cur.From) {
		ln.Spans = append(ln.Spans, withTo(cur, in.Until))
	}
	return ln
}

// transitionMark is the mark of an event that hands a session to a new run.
func transitionMark(k data.Kind) MarkKind {
	switch k {
	case data.KindHandedOver:
		return MarkHandover
	case data.KindPreempted:
		return MarkPreempted
	}
	return MarkTakeover
}

// At returns the span covering t, if the lane covers t.
func (ln *Lane) At(t time.Time) (Span, bool) {
	for _, s := range ln.Spans {
		if !t.Before(s.From) && t.Before(s.To) {
			return s, true
		}
	}
	return Span{}, false
}

func withTo(s Span, to time.Time) Span { s.To = to; return s }

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
