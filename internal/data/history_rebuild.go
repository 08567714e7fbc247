package data

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// point is the expiry a span's row had at a time the history records.
type point struct{ at, exp time.Time }

func isSpanEnd(kind *string) bool { return kind != nil && slices.Contains(spanEnds(), *kind) }

func eqFence(f *int64, fence int64) bool { return f != nil && *f == fence }

// holding rebuilds the session's lease at the instant at from its row of
// ownersQuery; false when it had no row then. It finds who held it (held),
// the label and whether the current row is that span (named), how the span
// ends after at (ends), and from the expiries recorded around at what the
// lease's was (expiry).
func (r ownerRow) holding(at time.Time) (Holding, bool) {
	h, prev, ok := r.held(at)
	if !ok {
		return h, false
	}
	if r.prAt != nil && eqFence(r.prFence, h.Fence) {
		prev = &point{*r.prAt, *r.prExp}
	}
	curIsSpan := r.named(&h)
	next, final, exact := r.ends(at, &h, curIsSpan)
	if !exact {
		expiry(&h, at, prev, next, final)
	}
	return h, true
}

// held is who held the session at at, with the expiry recorded by the
// event that gave it to them (prev); false when nobody did, or nothing
// tells.
func (r ownerRow) held(at time.Time) (h Holding, prev *point, ok bool) {
	h = Holding{Lease: Lease{Key: r.key}}
	truncSinceL := r.truncBefore != nil && (r.lAt == nil || !r.truncBefore.Before(*r.lAt))
	switch {
	case r.lAt != nil && !isSpanEnd(r.lKind) && !truncSinceL:
		h.RunID, h.Fence, h.Holder, h.AcquiredAt = deref(r.lRun), deref(r.lFence), deref(r.lHolder), *r.lAt
		if r.lExp != nil {
			prev = &point{*r.lAt, *r.lExp}
			h.TTL = r.lExp.Sub(*r.lAt)
		}
		return h, prev, true
	case r.lAt == nil && r.truncBefore == nil:
		// No event of the session since HistoryStart: its row at at, if it
		// had one, was made before the history kept.
		truncFirst := r.truncAfter != nil && (r.nAt == nil || r.truncAfter.Before(*r.nAt))
		switch {
		case truncFirst:
			return h, nil, false // a TRUNCATE wiped whatever it was: nothing tells
		case r.nAt != nil && isSpanEnd(r.nKind):
			h.RunID, h.Fence, h.Holder = deref(r.nRun), deref(r.nFence), deref(r.nHolder)
		case r.nAt != nil && r.nPrevFence != nil:
			h.RunID, h.Fence = deref(r.nPrevRun), *r.nPrevFence // a takeover names no predecessor's label
		case r.nAt == nil && r.curAcq != nil && !r.curAcq.After(at):
			h.RunID, h.Fence, h.Holder, h.AcquiredAt = *r.curRun, *r.curFence, *r.curHolder, *r.curAcq
		default:
			return h, nil, false
		}
		return h, nil, true
	}
	return h, nil, false
}

// named fills in h's label from the other events of its span where the
// one that started it did not say, and reports whether the session's
// current row is that span.
func (r ownerRow) named(h *Holding) (curIsSpan bool) {
	f := h.Fence
	if r.prAt != nil && eqFence(r.prFence, f) {
		h.Holder = cmp.Or(h.Holder, deref(r.prHolder))
	}
	if eqFence(r.nrFence, f) {
		h.Holder = cmp.Or(h.Holder, deref(r.nrHolder))
	}
	curIsSpan = eqFence(r.curFence, f) && r.curRun != nil && *r.curRun == h.RunID
	if curIsSpan {
		h.Holder = cmp.Or(h.Holder, *r.curHolder)
	}
	return curIsSpan
}

// ends is how h's span ends after at: the earliest expiry recorded after
// at (next) and the span's last expiry (final, nil when nothing records
// it). exact: the current row was renewed last at or before at, so its
// expiry is h's, set already.
func (r ownerRow) ends(at time.Time, h *Holding, curIsSpan bool) (next *point, final *time.Time, exact bool) {
	f := h.Fence
	truncEnds := r.truncAfter != nil && (r.nAt == nil || r.truncAfter.Before(*r.nAt))
	switch {
	case truncEnds:
		// A TRUNCATE records no row: the span's last expiry is unknown.
	case r.nAt != nil && isSpanEnd(r.nKind) && eqFence(r.nFence, f):
		final = r.nExp
	case r.nAt != nil && eqFence(r.nPrevFence, f):
		final = r.nPrevExp
	case curIsSpan:
		final = r.curExp
		if !r.curRenew.After(at) { // renewed last at or before at: exact
			h.ExpiresAt, h.RenewedAt, h.ExpiryKnown = *r.curExp, *r.curRenew, true
			h.Expired = !at.Before(*r.curExp)
			return nil, final, true
		}
		next = &point{*r.curRenew, *r.curExp}
	}
	if final != nil && next == nil {
		next = &point{*r.nAt, *final}
	}
	if r.nrAt != nil && eqFence(r.nrFence, f) && r.nrExp != nil {
		next = &point{*r.nrAt, *r.nrExp} // before the end: nearer
	}
	return next, final, false
}

// expiry sets h's expiry at at from the latest expiry recorded at or
// before it (prev), the earliest after it (next) and the span's last
// (final).
func expiry(h *Holding, at time.Time, prev, next *point, final *time.Time) {
	switch {
	case final != nil && !at.Before(*final):
		// Expired by at: an expired lease is never renewed, so its expiry
		// was the last one it had.
		h.ExpiresAt, h.ExpiryKnown, h.Expired = *final, true, true
	case prev != nil && (prev.at.Equal(at) || next != nil && prev.exp.Equal(next.exp)):
		// Recorded at that very instant, or no renewal between the two
		// records.
		h.ExpiresAt, h.ExpiryKnown = prev.exp, true
		if prev.at.Equal(h.AcquiredAt) {
			h.RenewedAt = h.AcquiredAt
		}
		h.Expired = !at.Before(prev.exp)
	default:
		if prev != nil {
			h.ExpiresAt = prev.exp
		}
		// Live unless expired by its final expiry (caught above); after a
		// TRUNCATE only the last recorded expiry tells.
		h.Expired = final == nil && prev != nil && !at.Before(prev.exp)
	}
}

// ownerRow is one candidate session's row of ownersQuery; nil pointers are
// NULLs (no such event, no current row).
type ownerRow struct {
	key Key
	// l: the last ownership event at or before the instant.
	lID                      *int64
	lAt                      *time.Time
	lKind                    *string
	lRun                     *uuid.UUID
	lFence                   *int64
	lExp                     *time.Time
	lHolder                  *string
	nID                      *int64
	nAt                      *time.Time
	nKind                    *string
	nRun, nPrevRun           *uuid.UUID
	nFence, nPrevFence       *int64
	nExp, nPrevExp           *time.Time
	nHolder                  *string
	prAt                     *time.Time
	prFence                  *int64
	prExp                    *time.Time
	prHolder                 *string
	nrAt                     *time.Time
	nrFence                  *int64
	nrExp                    *time.Time
	nrHolder                 *string
	curRun                   *uuid.UUID
	curHolder                *string
	curFence                 *int64
	curAcq, curRenew, curExp *time.Time
	truncBefore, truncAfter  *time.Time
}

func scanOwnerRow(row pgx.CollectableRow) (ownerRow, error) {
	var r ownerRow
	err := row.Scan(&r.key.Account, &r.key.Session,
		&r.lID, &r.lAt, &r.lKind, &r.lRun, &r.lFence, &r.lExp, &r.lHolder,
		&r.nID, &r.nAt, &r.nKind, &r.nRun, &r.nPrevRun, &r.nFence, &r.nPrevFence, &r.nExp, &r.nPrevExp, &r.nHolder,
		&r.prAt, &r.prFence, &r.prExp, &r.prHolder,
		&r.nrAt, &r.nrFence, &r.nrExp, &r.nrHolder,
		&r.curRun, &r.curHolder, &r.curFence, &r.curAcq, &r.curRenew, &r.curExp,
		&r.truncBefore, &r.truncAfter)
	return r, err
}
