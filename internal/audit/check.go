package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
)

const (
	maxPerInvShown = 10 // violations listed per invariant
)

// grant is one ownership period of a session, from lease.event.
type grant struct {
	key     data.Key
	run     uuid.UUID
	fence   int64
	holder  string
	at      time.Time
	ended   bool
	endAt   time.Time
	endKind data.Kind
	// expiredBy is, for a grant ended by a takeover, the expiry it had
	// then: an accepted write must have begun before it.
	expiredBy time.Time
	// slotless is set for a grant made while its account's limit was in
	// force whose event names no slot of it (a hand-over's: the run it
	// replaced held none): the run held the session but not a slot, so no
	// write of it may be accepted (invariant 3).
	slotless bool
	// slotEvent is the event of the grant that named no slot, slotKind its
	// kind.
	slotEvent int64
	slotKind  data.Kind
}

// outputRow is one row of leasetop_demo.output.
type outputRow struct {
	id          int64
	key         data.Key
	run         uuid.UUID
	fence       int64
	device      string
	accepted    bool
	txStartedAt time.Time
}

// Check verifies the lease's invariants after the fact, from the database's
// history (lease.event and leasetop_demo.output, restricted to rec's
// accounts) and what the holders' side recorded, and counts what happened.
// Run it when no holder is running any more.
func Check(ctx context.Context, store *data.Store, rec *Record) (Result, error) {
	events, err := scopedEvents(ctx, store, rec)
	if err != nil {
		return Result{}, err
	}
	rows, err := outputRows(ctx, store, rec.Accounts)
	if err != nil {
		return Result{}, err
	}
	c := &checker{rec: rec, grants: make(map[uuid.UUID]*grant), replaced: make(map[uuid.UUID]replacement), shown: make(map[Invariant]int)}
	c.tally.Refusals, c.tally.PreemptsRefused, c.tally.Joins = rec.Refusals, rec.PreemptsRefused, rec.Joins
	c.tally.Kills, c.tally.Freezes, c.tally.Forced = rec.Kills, rec.Freezes, rec.ForcedReleases
	c.history(events)
	c.writes(rows)
	c.replacedSilent(rows)
	c.runsEnded()
	return Result{Tally: c.tally, Limits: c.limits, Violations: c.violations}, nil
}

// scopedEvents reads the events of rec's accounts in id order.
func scopedEvents(ctx context.Context, store *data.Store, rec *Record) ([]data.Event, error) {
	var out []data.Event
	for e, err := range store.Events(ctx, rec.AfterEventID) {
		if err != nil {
			return nil, fmt.Errorf("read the event history: %w", err)
		}
		if slices.Contains(rec.Accounts, e.Key.Account) {
			out = append(out, e)
		}
	}
	return out, nil
}

func outputRows(ctx context.Context, store *data.Store, accounts []string) ([]outputRow, error) {
	rows, err := store.Pinned().Query(ctx, `
		SELECT id, account_id, session_id, run_id, fence, device, accepted, tx_started_at
		  FROM leasetop_demo.output WHERE account_id = ANY($1) ORDER BY id`, accounts)
	if err != nil {
		return nil, fmt.Errorf("read the demo's output: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outputRow, error) {
		var o outputRow
		err := r.Scan(&o.id, &o.key.Account, &o.key.Session, &o.run, &o.fence, &o.device, &o.accepted, &o.txStartedAt)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the demo's output: %w", err)
	}
	return out, nil
}

type checker struct {
	rec        *Record
	grants     map[uuid.UUID]*grant
	replaced   map[uuid.UUID]replacement // runs preempted, by the run that replaced them
	order      []*grant
	tally      Tally
	violations []Violation
	shown      map[Invariant]int // violations of each invariant so far
	limits     map[string]LimitPeak
}

func (c *checker) fail(inv Invariant, key data.Key, format string, args ...any) {
	c.shown[inv]++
	switch {
	case c.shown[inv] <= maxPerInvShown:
		c.violations = append(c.violations, Violation{Invariant: inv, Key: key, Detail: fmt.Sprintf(format, args...)})
	case c.shown[inv] == maxPerInvShown+1:
		c.violations = append(c.violations, Violation{Invariant: inv, Detail: "(more violations of this invariant left out)"})
	}
}

// history walks each session's events in id order (the order in which a
// session's transitions committed: they are serialised by the lease row's
// lock) and checks invariants 1 and 2.
func (c *checker) history(events []data.Event) {
	type session struct {
		cur       *grant
		lastFence int64
	}
	sessions := make(map[data.Key]*session)
	q := newQueues()
	defer c.checkQueues(q)
	a := newAsks()
	defer c.asksEnded(a)
	sl := newSlots(c.rec.Limits)
	defer c.slotsTally(sl)
	in := newInbox()
	defer c.messagesEnded(in)
	for _, e := range events {
		q.event(e)
		s := sessions[e.Key]
		if s == nil {
			s = &session{}
			sessions[e.Key] = s
		}
		c.askEvent(a, e, s.cur)
		switch {
		case e.Kind.Grants():
			c.tally.RunsStarted++
			c.grantEvent(e, s.cur)
			if e.Fence <= s.lastFence {
				c.fail(FencesRise, e.Key, "run %s was granted fence %d after fence %d had been granted (event %d)",
					short(e.RunID), e.Fence, s.lastFence, e.ID)
			}
			s.lastFence = max(s.lastFence, e.Fence)
			g := &grant{key: e.Key, run: e.RunID, fence: e.Fence, holder: e.Holder, at: e.At}
			c.grants[e.RunID] = g
			c.order = append(c.order, g)
			s.cur = g
		case e.Kind.Ends():
			c.countEnd(e.Kind)
			if s.cur == nil || s.cur.run != e.RunID {
				c.fail(OneOwner, e.Key, "run %s (fence %d) was released at %s, but the history does not show it holding the session (event %d)",
					short(e.RunID), e.Fence, clock(e.At), e.ID)
			} else {
				s.cur.ended, s.cur.endAt, s.cur.endKind = true, e.At, e.Kind
			}
			s.cur = nil
		case e.Kind == data.KindRenewRejected:
			c.tally.ZombieRenewalsRejected++
		case e.Kind == data.KindQueueJoined:
			c.tally.QueueWaits++
		}
		c.limitEvent(sl, e)
		c.messageEvent(in, e, s.cur)
	}
}

// grantEvent checks that a grant (acquired or taken over) happened when no
// other run held an unexpired lease, and ends the previous grant on a
// takeover.
func (c *checker) grantEvent(e data.Event, cur *grant) {
	if e.Kind == data.KindAcquired {
		if cur != nil {
			c.fail(OneOwner, e.Key, "run %s (%s, fence %d) acquired the session at %s while run %s (%s, fence %d) held it and had not released it (event %d)",
				short(e.RunID), e.Holder, e.Fence, clock(e.At), short(cur.run), cur.holder, cur.fence, e.ID)
		}
		return
	}
	if e.Kind == data.KindPreempted || e.Kind == data.KindHandedOver {
		if e.Kind == data.KindPreempted {
			c.tally.Preempts++
		}
		c.replaced[e.PrevRunID] = replacement{run: e.RunID, fence: e.Fence, at: e.At, kind: e.Kind}
	} else {
		c.tally.Takeovers++
	}
	switch {
	case cur == nil:
		c.fail(OneOwner, e.Key, "run %s (fence %d) took the session over at %s from run %s, which the history does not show holding it (event %d)",
			short(e.RunID), e.Fence, clock(e.At), short(e.PrevRunID), e.ID)
	case cur.run != e.PrevRunID:
		c.fail(OneOwner, e.Key, "run %s (fence %d) took the session over from run %s at %s, but run %s (fence %d) held it (event %d)",
			short(e.RunID), e.Fence, short(e.PrevRunID), clock(e.At), short(cur.run), cur.fence, e.ID)
	}
	// A preempt replaces an unexpired lease on purpose: the replaced run's
	// lease ends at the preempt (its row, so its renewals and fence checks,
	// are gone), so there is still one owner at a time. A hand-over ends the
	// previous grant in the transaction that starts this one
	// (lease.hand_over): its unexpired lease is the point.
	if e.Kind != data.KindPreempted && e.Kind != data.KindHandedOver && e.PrevExpiresAt.After(e.At) {
		c.fail(OneOwner, e.Key, "run %s (%s, fence %d) took the session over at %s while run %s's lease ran until %s: two owners for %s (event %d)",
			short(e.RunID), e.Holder, e.Fence, clock(e.At), short(e.PrevRunID), clock(e.PrevExpiresAt),
			e.PrevExpiresAt.Sub(e.At).Round(time.Millisecond), e.ID)
	}
	if prev := c.grants[e.PrevRunID]; prev != nil {
		if e.Kind == data.KindTakenOver && c.lost(prev.holder) {
			c.tally.TakeoversAfterLoss++
		}
		if !prev.ended {
			prev.ended, prev.endAt, prev.endKind, prev.expiredBy = true, e.At, e.Kind, e.PrevExpiresAt
			switch e.Kind {
			case data.KindPreempted:
				prev.expiredBy = time.Time{} // it ended at the preempt, before its expiry
			case data.KindHandedOver:
				prev.expiredBy = e.At
			}
		}
	}
}

// lost reports whether the process labelled holder was killed or frozen on
// purpose: a takeover of its expired lease came after process loss.
func (c *checker) lost(holder string) bool { return c.rec.Killed[holder] || c.rec.Frozen[holder] }

func (c *checker) countEnd(k data.Kind) {
	if k == data.KindForceReleased {
		c.tally.ForcedReleases++
	} else {
		c.tally.Releases++
	}
}

// writes checks invariant 3: every accepted write carries the fence of a
// grant its run held, began inside that grant (in a limited account, a
// grant that took a slot), and no accepted write of a session carries a
// lower fence than an earlier accepted one.
func (c *checker) writes(rows []outputRow) {
	highest := make(map[data.Key]int64)
	for _, r := range rows {
		if !r.accepted {
			c.tally.StaleWritesRefused++
			continue
		}
		c.tally.WritesAccepted++
		g := c.grants[r.run]
		switch {
		case g == nil || g.key != r.key:
			c.fail(NoStaleWrite, r.key, "write %d by run %s (fence %d) was accepted, but that run never held the session", r.id, short(r.run), r.fence)
		case g.fence != r.fence:
			c.fail(NoStaleWrite, r.key, "write %d by run %s was accepted with fence %d, but the run held fence %d", r.id, short(r.run), r.fence, g.fence)
		case r.txStartedAt.Before(g.at):
			c.fail(NoStaleWrite, r.key, "write %d with fence %d was accepted from a transaction that began at %s, before its run was granted the session at %s",
				r.id, r.fence, clock(r.txStartedAt), clock(g.at))
		case g.ended && !r.txStartedAt.Before(g.endAt):
			c.fail(NoStaleWrite, r.key, "write %d with stale fence %d was accepted from a transaction that began at %s, after its run's lease ended (%s at %s)",
				r.id, r.fence, clock(r.txStartedAt), g.endKind, clock(g.endAt))
		case !g.expiredBy.IsZero() && !r.txStartedAt.Before(g.expiredBy):
			c.fail(NoStaleWrite, r.key, "write %d with fence %d was accepted from a transaction that began at %s, after its run's lease expired at %s",
				r.id, r.fence, clock(r.txStartedAt), clock(g.expiredBy))
		case g.slotless:
			c.fail(NoStaleWrite, r.key, "write %d by run %s (fence %d) was accepted, but its run held the session without a slot of account %s's limit (its %s event %d named none)",
				r.id, short(r.run), r.fence, r.key.Account, g.slotKind, g.slotEvent)
		}
		if h := highest[r.key]; r.fence < h {
			c.fail(NoStaleWrite, r.key, "write %d with fence %d was accepted after a write with fence %d", r.id, r.fence, h)
		}
		highest[r.key] = max(highest[r.key], r.fence)
	}
}

// runsEnded checks invariant 4, and that every run a device believed it
// held was granted by the database (invariant 1 from the devices' side).
func (c *checker) runsEnded() {
	for _, g := range c.order {
		_, reported := c.rec.Started[g.run]
		if g.ended || reported || c.rec.Killed[g.holder] {
			continue // ended in the database, judged below, or its process was killed
		}
		c.fail(RunsEnded, g.key, "run %s (%s, fence %d) never ended: its lease was never released and no device reported it",
			short(g.run), g.holder, g.fence)
	}
	runs := make([]uuid.UUID, 0, len(c.rec.Started))
	for run := range c.rec.Started {
		runs = append(runs, run)
	}
	slices.SortFunc(runs, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, run := range runs {
		s := c.rec.Started[run]
		if g := c.grants[run]; g == nil || g.fence != s.Fence || g.key != s.Key {
			c.fail(OneOwner, s.Key, "%s believed it held the session as run %s with fence %d, but the database never granted that",
				s.Holder, short(run), s.Fence)
		}
		switch how := c.rec.Ended[run]; {
		case how == EndReleased || how == EndLost || how == EndKilled || how == EndHandedOver:
		case how == "" && c.rec.Killed[s.Holder]:
		case how == "":
			c.fail(RunsEnded, s.Key, "run %s on %s (fence %d) started but never ended", short(run), s.Holder, s.Fence)
		default:
			c.fail(RunsEnded, s.Key, "run %s on %s (fence %d) never ended: %s", short(run), s.Holder, s.Fence, how)
		}
	}
}

// short is a run id's first 8 hex digits, as the monitor shows it.
func short(id uuid.UUID) string { return id.String()[:8] }

// clock formats a database timestamp to the millisecond.
func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }
