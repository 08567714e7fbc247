package monitor

import (
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
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
	MarkMessage            // a message sent, delivered, carried, acknowledged or expired (moves no lease)
	MarkRefused            // a run refused the session because its account or pool was at its limit
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
	b := laneBuilder{ln: ln, until: in.Until, cur: Span{Kind: SpanNobody, From: t0}}
	if s := in.Start; s != nil {
		b.cur = Span{Kind: SpanHeld, From: t0, Holder: s.Holder, Run: s.RunID, Fence: s.Fence}
		if in.StartExact {
			b.curExp = s.ExpiresAt
		}
		if in.StartExact && !b.curExp.After(t0) {
			b.cur.Kind = SpanExpired
		}
	}
	for _, ev := range in.Events {
		if !ev.At.Before(t0) && !ev.At.After(in.Until) {
			b.apply(ev)
		}
	}
	return b.finish(in.Live)
}

// laneBuilder is BuildLane's state while it reads a lane's events in
// order: the spans closed so far and the current one.
type laneBuilder struct {
	ln    Lane
	until time.Time
	cur   Span
	// curExp is the current holder's expiry where the history pins it
	// exactly, else zero: renewals write no event, so an acquisition's
	// expiry is only the first of many. Exact are a takeover's previous
	// expiry, a release's, the live lease's and an exact start.
	curExp time.Time
}

// closeAt ends the current span at t (at its expiry first, when it ran out
// before t) and starts next.
func (b *laneBuilder) closeAt(t time.Time, next Span) {
	t = clampTime(t, b.cur.From, b.until)
	if b.cur.Kind == SpanHeld && !b.curExp.IsZero() && b.curExp.Before(t) && b.curExp.After(b.cur.From) {
		b.ln.Spans = append(b.ln.Spans, withTo(b.cur, b.curExp))
		b.cur = Span{Kind: SpanExpired, From: b.curExp, Holder: b.cur.Holder, Run: b.cur.Run, Fence: b.cur.Fence}
	}
	if t.After(b.cur.From) {
		b.ln.Spans = append(b.ln.Spans, withTo(b.cur, t))
	}
	next.From = t
	b.cur = next
}

// handTo ends the current span at ev, whose holder's lease ran out at
// prevExp (exact; zero: unknown), and starts ev's run's.
func (b *laneBuilder) handTo(ev data.Event, prevExp time.Time) {
	b.curExp = prevExp
	b.closeAt(ev.At, Span{Kind: SpanHeld, Holder: ev.Holder, Run: ev.RunID, Fence: ev.Fence})
	b.curExp = time.Time{}
}

// mark adds a mark at t.
func (b *laneBuilder) mark(t time.Time, k MarkKind) { b.ln.Marks = append(b.ln.Marks, Mark{t, k}) }

// apply reads one event of the lane's window.
func (b *laneBuilder) apply(ev data.Event) {
	switch ev.Kind {
	case data.KindAcquired:
		b.handTo(ev, b.curExp)
	case data.KindTakenOver, data.KindHandedOver, data.KindPreempted:
		b.handTo(ev, ev.PrevExpiresAt) // the holder it was taken from ran out then (exact)
		b.mark(ev.At, transitionMark(ev.Kind))
	case data.KindReleased, data.KindForceReleased:
		if ev.RunID == b.cur.Run && ev.Fence == b.cur.Fence {
			b.curExp = ev.ExpiresAt // the row's expiry when it went (exact)
		}
		b.closeAt(ev.At, Span{Kind: SpanNobody})
		b.curExp = time.Time{}
		if ev.Kind == data.KindForceReleased {
			b.mark(ev.At, MarkForced)
		}
	case data.KindRenewRejected:
		b.mark(ev.At, MarkZombie)
	case data.KindMessageSent, data.KindMessageDelivered, data.KindMessageCarried, data.KindMessageAcked, data.KindMessageExpired:
		b.mark(ev.At, MarkMessage) // the inbox's: no owner changes, whatever run it names
	case data.KindLimitRefused:
		b.mark(ev.At, MarkRefused) // its run was granted nothing: no owner changes
	case data.KindTruncated:
		b.curExp = time.Time{}
		b.closeAt(ev.At, Span{Kind: SpanNobody})
		b.mark(ev.At, MarkOther)
	default:
		// A kind from a newer schema: a mark; and if it names a new run
		// with a higher fence, the session changed hands.
		b.mark(ev.At, MarkOther)
		if ev.RunID != uuid.Nil && ev.RunID != b.cur.Run && ev.Fence > b.cur.Fence && !ev.ExpiresAt.IsZero() {
			b.handTo(ev, ev.PrevExpiresAt)
		}
	}
}

// finish closes the lane at its end; live is the session's lease now, if
// any, which tells the current holder's expiry.
func (b *laneBuilder) finish(live *data.Lease) Lane {
	if b.cur.Kind == SpanHeld && live != nil && live.RunID == b.cur.Run && live.Fence == b.cur.Fence {
		b.curExp = live.ExpiresAt // renewed since the event that started the span
	}
	if b.cur.Kind == SpanHeld && !b.curExp.IsZero() && b.curExp.Before(b.until) && b.curExp.After(b.cur.From) {
		b.mark(b.curExp, MarkExpired)
	}
	if b.cur.Kind == SpanHeld || b.cur.Kind == SpanExpired {
		b.closeAt(b.until, Span{})
	} else if b.until.After(b.cur.From) {
		b.ln.Spans = append(b.ln.Spans, withTo(b.cur, b.until))
	}
	return b.ln
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
