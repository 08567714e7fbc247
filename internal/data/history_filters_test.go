package data_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// describe prints a Holding's fields (%+v would print its Key's String).
func describe(h data.Holding) string {
	return fmt.Sprintf("%v run %v holder %q fence %d acquired %v renewed %v expires %v (known %v) expired %v ttl %v",
		h.Key, h.RunID, h.Holder, h.Fence, h.AcquiredAt, h.RenewedAt, h.ExpiresAt, h.ExpiryKnown, h.Expired, h.TTL)
}

func eventIDs(evs []data.Event) []int64 {
	ids := make([]int64, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

// TestEventsBetweenFilters: each field of HistoryFilter narrows the events
// to what it names, alone and combined, directly and through PgBouncer in
// transaction mode; a filter that cannot be run is ErrInvalid.
func TestEventsBetweenFilters(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		a1 := data.Key{Account: "acme", Session: "s1"}
		a2 := data.Key{Account: "acme", Session: "s2"}
		b1 := data.Key{Account: "beta", Session: "s1"}
		r1, r2 := uuid.New(), uuid.New()
		mustAcquire(t, s, a1, r1, time.Minute)            // 1
		mustAcquire(t, s, a2, r2, time.Minute)            // 2
		mustAcquire(t, s, b1, uuid.New(), time.Minute)    // 3
		if _, err := s.Release(ctx, a1, r1); err != nil { // 4
			t.Fatal(err)
		}
		if _, err := s.ForceReleaseAny(ctx, a2, "ops"); err != nil { // 5
			t.Fatal(err)
		}
		mustAcquire(t, s, a1, uuid.New(), time.Minute) // 6
		all := events(t, s)
		if len(all) != 6 {
			t.Fatalf("%d events, want 6", len(all))
		}
		id := func(i int) int64 { return all[i-1].ID }
		at := func(i int) time.Time { return all[i-1].At }
		ids := func(is ...int) []int64 {
			out := []int64{}
			for _, i := range is {
				out = append(out, id(i))
			}
			return out
		}
		tests := []struct {
			name string
			f    data.HistoryFilter
			want []int64
		}{
			{"all", data.HistoryFilter{}, ids(1, 2, 3, 4, 5, 6)},
			{"account", data.HistoryFilter{Accounts: []string{"acme"}}, ids(1, 2, 4, 5, 6)},
			{"session", data.HistoryFilter{Sessions: []string{"s1"}}, ids(1, 3, 4, 6)},
			{"account and session", data.HistoryFilter{Accounts: []string{"beta"}, Sessions: []string{"s1"}}, ids(3)},
			{"keys", data.HistoryFilter{Keys: []data.Key{a2, b1}}, ids(2, 3, 5)},
			{"keys and account", data.HistoryFilter{Keys: []data.Key{a2, b1}, Accounts: []string{"beta"}}, ids(3)},
			{"kinds", data.HistoryFilter{Kinds: []data.Kind{data.KindReleased, data.KindForceReleased}}, ids(4, 5)},
			{"unknown kind", data.HistoryFilter{Kinds: []data.Kind{"preempted"}}, ids()},
			{"since", data.HistoryFilter{Since: at(3)}, ids(3, 4, 5, 6)},
			{"until", data.HistoryFilter{Until: at(3)}, ids(1, 2)},
			{"range of a key", data.HistoryFilter{Keys: []data.Key{a1}, Since: at(2), Until: at(6)}, ids(4)},
			{"limit", data.HistoryFilter{Limit: 2}, ids(1, 2)},
			{"newest", data.HistoryFilter{Limit: 2, Descending: true}, ids(6, 5)},
			{"newest of an account before", data.HistoryFilter{Accounts: []string{"acme"}, Until: at(6), Limit: 2, Descending: true}, ids(5, 4)},
		}
		for _, tt := range tests {
			got, err := s.EventsBetween(ctx, tt.f)
			if err != nil {
				t.Fatalf("%s: EventsBetween err = %v", tt.name, err)
			}
			if fmt.Sprint(eventIDs(got)) != fmt.Sprint(tt.want) {
				t.Errorf("%s: EventsBetween ids = %v, want %v", tt.name, eventIDs(got), tt.want)
			}
		}
		for _, f := range []data.HistoryFilter{{Limit: -1}, {Since: at(3), Until: at(2)}} {
			if _, err := s.EventsBetween(ctx, f); !errors.Is(err, data.ErrInvalid) {
				t.Errorf("EventsBetween(%+v) err = %v, want ErrInvalid", f, err)
			}
		}
		// OwnersAt narrows the same way: at event 3, a1, a2 and b1 are held.
		for _, tt := range []struct {
			f    data.HistoryFilter
			want string
		}{
			{data.HistoryFilter{}, "[acme/s1 acme/s2 beta/s1]"},
			{data.HistoryFilter{Accounts: []string{"acme"}}, "[acme/s1 acme/s2]"},
			{data.HistoryFilter{Sessions: []string{"s1"}}, "[acme/s1 beta/s1]"},
			{data.HistoryFilter{Accounts: []string{"acme", "gamma"}, Sessions: []string{"s2", "s9"}}, "[acme/s2]"},
			{data.HistoryFilter{Keys: []data.Key{a2, {Account: "nobody", Session: "s"}}}, "[acme/s2]"},
		} {
			o, err := s.OwnersAt(ctx, at(3), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range o.Holdings {
				got = append(got, h.Key.String())
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("OwnersAt(event 3, %+v) = %v, want %s", tt.f, got, tt.want)
			}
		}
	})
}

// TestOwnersAtBeforeTheHistoryKept: after prune_events, a lease whose span
// began before the oldest event kept is still told at an instant after it:
// from its current row (still held), from its release (the run, fence and
// label the release recorded), or from the takeover that replaced it (the
// run and fence; no label, which a takeover does not record). Before the
// oldest event, ErrHistoryPruned, with HistoryStart.
func TestOwnersAtBeforeTheHistoryKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	held := data.Key{Account: "acme", Session: "held"}
	released := data.Key{Account: "acme", Session: "released"}
	taken := data.Key{Account: "acme", Session: "taken"}
	marker := data.Key{Account: "acme", Session: "marker"}
	gHeld := mustAcquire(t, s, held, uuid.New(), time.Hour)
	rel := uuid.New()
	gRel := mustAcquire(t, s, released, rel, time.Hour)
	gTaken := mustAcquire(t, s, taken, uuid.New(), time.Second)
	first := events(t, s)
	pgtest.WaitExpired(t, db.Conn(t), taken)
	mustAcquire(t, s, marker, uuid.New(), time.Hour)
	if _, err := s.Release(ctx, released, rel); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, s, taken, uuid.New(), time.Hour)
	cut := first[2].At.Add(500 * time.Millisecond) // after the three acquires, before the marker (a second later)
	if _, err := db.Conn(t).Exec(ctx, `SELECT lease.prune_events(clock_timestamp() - $1::timestamptz)`, cut); err != nil {
		t.Fatal(err)
	}
	kept := events(t, s)
	if len(kept) != 3 || kept[0].Key != marker {
		t.Fatalf("kept %v, want the marker's acquire, the release and the takeover", kinds(kept))
	}
	at := kept[0].At
	o, err := s.OwnersAt(ctx, at, data.HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !o.HistoryStart.Equal(at) {
		t.Errorf("HistoryStart = %v, want the marker's acquire %v", o.HistoryStart, at)
	}
	got := map[data.Key]data.Holding{}
	for _, h := range o.Holdings {
		got[h.Key] = h
	}
	if h := got[held]; h.Fence != gHeld.Fence || h.AcquiredAt.IsZero() || h.Expired || !h.ExpiryKnown {
		t.Errorf("held: %s, want fence %d, acquired at its row's time, live, expiry known (its row was renewed last before)", describe(h), gHeld.Fence)
	}
	if h := got[released]; h.Fence != gRel.Fence || h.RunID != data.PublicRunID(rel) || h.Holder == "" ||
		!h.AcquiredAt.IsZero() || h.Expired || h.ExpiryKnown || !h.ExpiresAt.IsZero() {
		t.Errorf("released: %s, want run %v fence %d with its label, start unknown, live, expiry unknown (it could have been renewed)",
			describe(h), data.PublicRunID(rel), gRel.Fence)
	}
	if h := got[taken]; h.Fence != gTaken.Fence || h.Holder != "" || !h.Expired || !h.ExpiresAt.Equal(gTaken.ExpiresAt) {
		t.Errorf("taken: %s, want fence %d, no label, expired at %v", describe(h), gTaken.Fence, gTaken.ExpiresAt)
	}
	if _, ok := got[marker]; !ok || len(got) != 4 {
		t.Errorf("holdings %v, want the marker's too, four in all", o.Holdings)
	}
	o, err = s.OwnersAt(ctx, at.Add(-time.Microsecond), data.HistoryFilter{})
	var pe *data.PrunedError
	if !errors.Is(err, data.ErrHistoryPruned) || !errors.As(err, &pe) || !pe.HistoryStart.Equal(at) || !o.HistoryStart.Equal(at) {
		t.Errorf("OwnersAt just before the history: %v (%+v), want ErrHistoryPruned naming %v", err, o, at)
	}
}

// TestOwnersAtOtherKinds: kinds other engineers add (preempted,
// handed_over, queue_joined) and kinds unknown to this code do not break
// OwnersAt: preempted and handed_over start a span of the new run; a kind
// that names a run it replaced (prev_run_id) does too; any other kind
// changes nobody's ownership. A TRUNCATE ends every span.
func TestOwnersAtOtherKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `ALTER TABLE lease.event ALTER COLUMN kind TYPE text`); err != nil {
		t.Fatal(err)
	}
	k := data.Key{Account: "acme", Session: "k"}
	a := uuid.New()
	g := mustAcquire(t, s, k, a, time.Hour)
	t0 := events(t, s)[0].At
	runs := map[string]uuid.UUID{"b": uuid.New(), "c": uuid.New(), "d": uuid.New(), "e": uuid.New(), "x": uuid.New()}
	insert := func(ms int, kind, run, prev string, fence int64) time.Time {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		var prevRun *uuid.UUID
		if prev != "" {
			p := runs[prev]
			if prev == "a" {
				p = data.PublicRunID(a)
			}
			prevRun = &p
		}
		if _, err := conn.Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, prev_run_id, fence, expires_at, holder)
			VALUES ($1::timestamptz, $2, $3, $4, $5, $6, $7, $1::timestamptz + interval '1 hour', $8)`, at, kind, k.Account, k.Session, runs[run], prevRun, fence, "run-"+run); err != nil {
			t.Fatal(err)
		}
		return at
	}
	tPre := insert(1, "preempted", "b", "a", g.Fence+1)
	tQueue := insert(2, "queue_joined", "c", "", g.Fence+1)
	tAudit := insert(3, "some_audit", "x", "", g.Fence+9)
	tHand := insert(4, "handed_over", "d", "b", g.Fence+2)
	tMove := insert(5, "some_move", "e", "d", g.Fence+3)
	pgtest.WaitServerPast(t, conn, tMove)
	for _, tt := range []struct {
		at    time.Time
		run   uuid.UUID
		fence int64
	}{
		{tPre.Add(-time.Microsecond), data.PublicRunID(a), g.Fence},
		{tPre, runs["b"], g.Fence + 1},
		{tQueue, runs["b"], g.Fence + 1},
		{tAudit, runs["b"], g.Fence + 1},
		{tHand, runs["d"], g.Fence + 2},
		{tMove, runs["e"], g.Fence + 3},
	} {
		o, err := s.OwnersAt(ctx, tt.at, data.HistoryFilter{Keys: []data.Key{k}})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Holdings) != 1 || o.Holdings[0].RunID != tt.run || o.Holdings[0].Fence != tt.fence || o.Holdings[0].Expired {
			t.Errorf("OwnersAt(%v) = %d leases %v, want run %v fence %d, live", tt.at, len(o.Holdings), o.Holdings, tt.run, tt.fence)
		}
	}

	other := data.Key{Account: "acme", Session: "truncated"}
	mustAcquire(t, s, other, uuid.New(), time.Hour)
	if _, err := conn.Exec(ctx, `TRUNCATE lease.session_lease`); err != nil {
		t.Fatal(err)
	}
	evs, err := s.EventsBetween(ctx, data.HistoryFilter{Kinds: []data.Kind{data.KindTruncated}})
	if err != nil || len(evs) != 1 {
		t.Fatalf("truncated events %v, %v", evs, err)
	}
	tr := evs[0].At
	for _, tt := range []struct {
		at   time.Time
		want int
	}{{tr.Add(-time.Microsecond), 1}, {tr, 0}} {
		o, err := s.OwnersAt(ctx, tt.at, data.HistoryFilter{Sessions: []string{"truncated"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Holdings) != tt.want {
			t.Errorf("OwnersAt(%v) around the TRUNCATE = %+v, want %d leases", tt.at, o.Holdings, tt.want)
		}
	}
}

// TestEventsBetweenAllPages: EventsBetweenAll yields every selected event
// once, in (at, id) order, across pages, also where more events than a page
// share one instant (a renew_many's rejected renewals do).
func TestEventsBetweenAllPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	if _, err := db.Conn(t).Exec(ctx, `
		INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence, expires_at)
		SELECT CASE WHEN g BETWEEN 500 AND 1700 THEN '2026-01-01 00:00:05+00'::timestamptz
		            ELSE '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 ms' END,
		       'acquired', CASE WHEN g % 3 = 0 THEN 'other' ELSE 'acme' END, 's' || g, gen_random_uuid(), g, clock_timestamp()
		  FROM generate_series(1, 2600) g`); err != nil {
		t.Fatal(err)
	}
	want, err := s.EventsBetween(ctx, data.HistoryFilter{Accounts: []string{"acme"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []data.Event
	for ev, err := range s.EventsBetweenAll(ctx, data.HistoryFilter{Accounts: []string{"acme"}, Limit: 5, Descending: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(want) < 1700 || fmt.Sprint(eventIDs(got)) != fmt.Sprint(eventIDs(want)) {
		t.Errorf("EventsBetweenAll yielded %d events, want the %d EventsBetween returns, in its order", len(got), len(want))
	}
	n := 0
	for _, err := range s.EventsBetweenAll(ctx, data.HistoryFilter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 1500 {
			break
		}
	}
	if n != 1500 {
		t.Errorf("breaking out after 1500 events: %d", n)
	}
}
