package data

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionsQuery selects a page of the sessions of a window of the history,
// in (account, session) order, the database's: those that had a lease at
// some instant of [Since, Until), or an event in it. It is how the
// monitor's timeline finds its lanes: the sessions of the time it shows,
// ended or not, rather than the leases held now.
type SessionsQuery struct {
	// Since and Until are the window, on the database clock (Until after
	// Since).
	Since, Until time.Time
	// From is where the page starts: the sessions at or after it (after it
	// when After is set); the zero Key starts at the first.
	From  Key
	After bool
	// Back starts the page up to Back sessions before From instead, for a
	// reader scrolling back (fewer when fewer come before it).
	Back int
	// Last asks for the last page (the last Limit sessions): From, After
	// and Back are ignored.
	Last bool
	// Limit is the page's size: 1 to MaxSessionsPage.
	Limit int
	// Match keeps the sessions whose account or session id, or the holder
	// label (or the label it replaced) or run id of one of its events since
	// Since, or of its lease now, contains it, in any case; "" keeps all.
	Match string
}

// MaxSessionsPage is the largest SessionsQuery.Limit.
const MaxSessionsPage = 1000

func (q SessionsQuery) validate() error {
	switch {
	case q.Limit < 1 || q.Limit > MaxSessionsPage:
		return &InputError{Field: "limit", Problem: fmt.Sprintf("must be 1 to %d, got %d", MaxSessionsPage, q.Limit)}
	case q.Back < 0:
		return &InputError{Field: "back", Problem: fmt.Sprintf("must be 0 or more, got %d", q.Back)}
	case q.Since.IsZero() || q.Until.IsZero() || !q.Until.After(q.Since):
		return &InputError{Field: "until", Problem: fmt.Sprintf("(%s) must be after since (%s)",
			q.Until.Format(time.RFC3339Nano), q.Since.Format(time.RFC3339Nano))}
	}
	return nil
}

// Sessions returns the page of sessions q selects, in key order. It reads
// by index only what the page needs: the window's sessions are found by
// walking the keys of the events since q.Since in key order
// (event_key_at_idx, one key a step, in the partitions from q.Since on:
// its cost grows with the sessions with events since then that it passes,
// not with their events), each checked by a few probes of the same index
// (an event in the window; else, held at q.Since: its last grant or end
// before it is a grant), beside the leases held now that were acquired
// before q.Until (the table's key). With Match the candidates are the
// matching sessions of the events since q.Since, read by time
// (event_at_idx): a search costs those events, which a narrower window
// makes fewer. Both directions of a page (Back, Last) are one round trip.
// It needs only SELECT (lease_reader) and runs on a standby.
func (s *Store) Sessions(ctx context.Context, q SessionsQuery) ([]Key, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	q.Match = strings.ToLower(q.Match)
	var before, page []Key
	b := &pgx.Batch{}
	switch {
	case q.Last:
		queueSessions(b, q, sessionsDesc, nil, q.Limit, &before)
	default:
		if q.Back > 0 {
			op := "<"
			if q.After {
				op = "<="
			}
			queueSessions(b, q, sessionsDesc, &sessionsBound{q.From, op}, q.Back, &before)
		}
		op := ">="
		if q.After {
			op = ">"
		}
		var bound *sessionsBound
		if q.From != (Key{}) || q.After {
			bound = &sessionsBound{q.From, op}
		}
		queueSessions(b, q, sessionsAsc, bound, q.Limit, &page)
	}
	if err := s.readSnapshot(ctx, b); err != nil {
		return nil, fmt.Errorf("read the window's sessions: %w", translate(err))
	}
	slices.Reverse(before) // read newest key first
	keys := append(before, page...)
	if len(keys) > q.Limit {
		keys = keys[:q.Limit]
	}
	return keys, nil
}

// sessionsBound is a page's bound on the keys: (account, session) op key.
type sessionsBound struct {
	key Key
	op  string // >=, >, <, <=
}

// The directions a page of sessions is read in.
const (
	sessionsAsc  = "ASC"
	sessionsDesc = "DESC"
)

// queueSessions queues the statement of up to limit sessions of q's window
// in dir from bound (nil: from the first in dir), collected into keys.
func queueSessions(b *pgx.Batch, q SessionsQuery, dir string, bound *sessionsBound, limit int, keys *[]Key) {
	query, args := sessionsStatement(q, dir, bound, limit)
	b.Queue(query, args...).Query(func(r pgx.Rows) error {
		got, err := pgx.CollectRows(r, func(row pgx.CollectableRow) (Key, error) {
			var k Key
			err := row.Scan(&k.Account, &k.Session)
			return k, err
		})
		*keys = got
		return err
	})
}

// sessionsStatement builds the statement of a page of the window's
// sessions: the candidates, the sessions with events since $1, kept when
// they had an event in [$1, $2) or a lease at $1, beside the leases held
// now that were acquired before $2, the two merged in key order. Without
// Match the candidates are walked in dir, one index probe of
// event_key_at_idx a key (a recursive CTE: PostgreSQL 15 has no skip scan),
// so a page costs the sessions it passes. With Match they are the
// sessions of the events since $1 that match it, read by time through
// event_at_idx and filtered before any check: a search costs the events
// since the window's start, not a walk past every session.
func sessionsStatement(q SessionsQuery, dir string, bound *sessionsBound, limit int) (string, []any) {
	strict := ">"
	if dir == sessionsDesc {
		strict = "<"
	}
	p := params{q.Since, q.Until}
	grants := p.add([]string{string(KindAcquired), string(KindTakenOver), string(KindPreempted), string(KindHandedOver)})
	owning := p.add(append(spanStarts(), spanEnds()...))
	replacing := p.add([]string{string(KindReleased), string(KindForceReleased), string(KindTakenOver), string(KindPreempted), string(KindHandedOver)})
	lim := p.add(limit)
	var first, live string
	if bound != nil {
		a, s := p.add(bound.key.Account), p.add(bound.key.Session)
		first = " AND (e.account_id, e.session_id) " + bound.op + " (" + a + ", " + s + ")"
		live = " AND (l.account_id, l.session_id) " + bound.op + " (" + a + ", " + s + ")"
	}
	var cand string
	if q.Match == "" {
		order := "ORDER BY e.account_id " + dir + ", e.session_id " + dir + " LIMIT 1"
		cand = `WITH RECURSIVE walk(a, s) AS (
	(SELECT e.account_id, e.session_id FROM lease.event e WHERE e.at >= $1` + first + ` ` + order + `)
	UNION ALL
	SELECT n.a, n.s FROM walk w CROSS JOIN LATERAL (
		SELECT e.account_id AS a, e.session_id AS s FROM lease.event e
		 WHERE e.at >= $1 AND (e.account_id, e.session_id) ` + strict + ` (w.a, w.s) ` + order + `) n
),`
	} else {
		m := p.add(q.Match)
		has := func(col string) string { return "strpos(lower(" + col + "), " + m + ") > 0" }
		// Materialized: the matching sessions all read by time, then
		// sorted, then checked in order until the page is full (ordered by
		// key instead, the planner would read every event since $1 in key
		// order through the heap, to stop early).
		cand = `WITH found(a, s) AS MATERIALIZED (
	SELECT DISTINCT e.account_id, e.session_id FROM lease.event e
	 WHERE e.at >= $1` + first + `
	   AND (` + has("e.account_id") + ` OR ` + has("e.session_id") + ` OR ` + has("e.holder") + ` OR ` + has("e.prev_holder") + `
	        OR ` + has("e.run_id::text") + ` OR ` + has("e.prev_run_id::text") + `)
),
walk(a, s) AS (SELECT a, s FROM found ORDER BY a ` + dir + `, s ` + dir + ` OFFSET 0),`
		live += ` AND (` + has("l.account_id") + ` OR ` + has("l.session_id") + ` OR ` + has("l.holder") + ` OR ` + has("l.run_id::text") + `)`
	}
	const key = `e.account_id = w.a AND e.session_id = w.s`
	query := cand + `
hist AS (
	SELECT w.a, w.s FROM walk w
	 WHERE w.a <> ''
	   AND (EXISTS (SELECT 1 FROM lease.event e WHERE ` + key + ` AND e.at >= $1 AND e.at < $2)
	        OR (SELECT e.kind::text = ANY(` + grants + `::text[]) FROM lease.event e
	             WHERE ` + key + ` AND e.at <= $1 AND e.kind::text = ANY(` + owning + `::text[])
	             ORDER BY e.at DESC, e.id DESC LIMIT 1) IS TRUE
	        OR (NOT EXISTS (SELECT 1 FROM lease.event e WHERE ` + key + ` AND e.at <= $1 AND e.kind::text = ANY(` + owning + `::text[]))
	            AND (SELECT e.kind::text = ANY(` + replacing + `::text[]) FROM lease.event e
	                  WHERE ` + key + ` AND e.at > $1 AND e.kind::text = ANY(` + owning + `::text[])
	                  ORDER BY e.at, e.id LIMIT 1) IS TRUE))
	 LIMIT ` + lim + `
),
live AS (
	SELECT l.account_id AS a, l.session_id AS s FROM lease.session_lease l
	 WHERE l.acquired_at < $2` + live + `
	 ORDER BY l.account_id ` + dir + `, l.session_id ` + dir + ` LIMIT ` + lim + `
)
SELECT a, s FROM (SELECT a, s FROM hist UNION SELECT a, s FROM live) u ORDER BY a ` + dir + `, s ` + dir + ` LIMIT ` + lim
	return query, p
}
