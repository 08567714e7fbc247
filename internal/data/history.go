package data

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"
)

// HistoryFilter selects events of lease.event. Every field that is set
// narrows the selection (they combine with AND; the values within one field
// with OR); the zero HistoryFilter selects everything.
type HistoryFilter struct {
	// Accounts and Sessions keep the events whose account (session) id is
	// one of these.
	Accounts, Sessions []string
	// Keys keeps the events of these sessions: the timeline's lanes.
	Keys []Key
	// Kinds keeps the events of these kinds (unknown kinds match nothing).
	Kinds []Kind
	// Since and Until bound the events' time, on the database clock:
	// Since <= at < Until. A zero Since or Until leaves that side open.
	Since, Until time.Time
	// Limit caps the number of events returned (0: no cap): the oldest
	// Limit of them, or the newest with Descending.
	Limit int
	// Descending returns the newest first.
	Descending bool
}

// A truncated event names no session (its ids are empty): a filter by
// account, session or key never selects it. A reader that draws lanes and
// must see a TRUNCATE end every span asks for Kinds{KindTruncated} too.

// validate refuses a filter no query should run with.
func (f HistoryFilter) validate() error {
	if f.Limit < 0 {
		return &InputError{Field: "limit", Problem: fmt.Sprintf("must be 0 or more, got %d", f.Limit)}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return &InputError{Field: "until", Problem: fmt.Sprintf("(%s) is before since (%s)",
			f.Until.Format(time.RFC3339Nano), f.Since.Format(time.RFC3339Nano))}
	}
	return nil
}

// params collects a query's bind parameters and hands out their $n.
type params []any

func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// keyConds returns the conditions of f's Accounts, Sessions and Keys on the
// columns of alias e (lease.event or lease.session_lease).
func (f HistoryFilter) keyConds(e string, p *params) []string {
	var conds []string
	if len(f.Accounts) > 0 {
		conds = append(conds, e+".account_id = ANY("+p.add(f.Accounts)+"::text[])")
	}
	if len(f.Sessions) > 0 {
		conds = append(conds, e+".session_id = ANY("+p.add(f.Sessions)+"::text[])")
	}
	if len(f.Keys) > 0 {
		accts, sesss := splitKeys(f.Keys)
		conds = append(conds, "("+e+".account_id, "+e+".session_id) IN (SELECT k.a, k.s FROM unnest("+
			p.add(accts)+"::text[], "+p.add(sesss)+"::text[]) k(a, s))")
	}
	return conds
}

func splitKeys(keys []Key) (accts, sesss []string) {
	accts, sesss = make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		accts[i], sesss[i] = k.Account, k.Session
	}
	return accts, sesss
}

func kindStrings(kinds []Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// eventsBetweenQuery builds EventsBetween's statement: only the conditions
// f sets, each value a bind parameter, so the planner sees a plain range on
// event_key_at_idx (account_id, session_id, at, id) for keys or accounts,
// or on event_at_idx (at) otherwise.
func eventsBetweenQuery(f HistoryFilter) (string, []any) { return eventsPageQuery(f, nil) }

// eventsPageQuery is eventsBetweenQuery for the events after the event
// after (in the order (at, id), ascending), when it is not nil.
func eventsPageQuery(f HistoryFilter, after *Event) (string, []any) {
	var p params
	conds := f.keyConds("e", &p)
	if !f.Since.IsZero() {
		conds = append(conds, "e.at >= "+p.add(f.Since))
	}
	if after != nil {
		at, id := p.add(after.At), p.add(after.ID)
		conds = append(conds, "e.at >= "+at, "(e.at > "+at+" OR e.id > "+id+")")
	}
	if !f.Until.IsZero() {
		conds = append(conds, "e.at < "+p.add(f.Until))
	}
	if len(f.Kinds) > 0 {
		conds = append(conds, "e.kind::text = ANY("+p.add(kindStrings(f.Kinds))+"::text[])")
	}
	var b strings.Builder
	b.WriteString("SELECT " + eventColumns + " FROM lease.event e")
	if len(conds) > 0 {
		b.WriteString(" WHERE " + strings.Join(conds, " AND "))
	}
	if f.Descending {
		b.WriteString(" ORDER BY e.at DESC, e.id DESC")
	} else {
		b.WriteString(" ORDER BY e.at, e.id")
	}
	if f.Limit > 0 {
		b.WriteString(" LIMIT " + p.add(f.Limit))
	}
	return b.String(), p
}

// EventsBetween returns the events f selects, ordered by time (then id),
// oldest first unless f.Descending. It reads by time range through an
// index (see eventsBetweenQuery), never the whole table unless f selects
// it all. It needs only SELECT on lease.event (lease_reader) and runs on a
// standby.
//
// Event times are the database clock's. Within one session they follow the
// order the transitions happened in, but for an acquire that waited on the
// row lock of the release before it: its time is when it was called, which
// can be up to that wait earlier than the release's.
func (s *Store) EventsBetween(ctx context.Context, f HistoryFilter) ([]Event, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	query, args := eventsBetweenQuery(f)
	return s.events(ctx, query, customPlan(args)...)
}

// EventsBetweenAll iterates over every event f selects, oldest first (f's
// Limit and Descending are ignored), reading them a page at a time as the
// loop asks for more, each page a range of the same index as
// EventsBetween's: a reader of a long history holds one page, not all of
// it. Breaking out of the loop stops the reading; a failed read ends the
// iteration, yielded with a zero Event.
func (s *Store) EventsBetweenAll(ctx context.Context, f HistoryFilter) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f.Limit, f.Descending = eventsPage, false
		if err := f.validate(); err != nil {
			yield(Event{}, err)
			return
		}
		var after *Event
		for {
			query, args := eventsPageQuery(f, after)
			page, err := s.events(ctx, query, customPlan(args)...)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range page {
				if !yield(ev, nil) {
					return
				}
			}
			if len(page) < eventsPage {
				return
			}
			after = &page[len(page)-1]
		}
	}
}

// ServerTime reads the database server's clock (clock_timestamp()): what
// relative times ("10m ago") are taken from, so they mean the same instant
// as the history's.
func (s *Store) ServerTime(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&now); err != nil {
		return now, fmt.Errorf("read the server clock: %w", translate(err))
	}
	return now, nil
}
