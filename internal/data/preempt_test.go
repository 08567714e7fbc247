package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestPreemptTakesAnUnexpiredLease: a preempt replaces a live holder at
// once with a higher fence; the history records one preempted event naming
// both runs, both labels, the login and the reason, and listeners are told
// once; the preempted run's renewals and fence checks are refused.
func TestPreemptTakesAnUnexpiredLease(t *testing.T) {
	t.Parallel()
	eachConnection(t, func(t *testing.T, db pgtest.DB, s *data.Store) {
		ctx := context.Background()
		sender := db.Conn(t)
		drain := collect(t, db.Conn(t), sender)
		k := data.Key{Account: "acme", Session: "chat-1"}
		victim, taker := uuid.New(), uuid.New()
		old, err := s.AcquireWith(ctx, k, victim, time.Hour, "desktop", data.AcquireOptions{Attachment: "stream-7"})
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Preempt(ctx, k, taker, time.Hour, "phone", "user moved to the phone", data.AcquireOptions{})
		if err != nil {
			t.Fatalf("Preempt of a live preemptible holder: %v, want a grant", err)
		}
		if g.RunID != taker || g.Fence <= old.Fence {
			t.Fatalf("Preempt grant = %+v, want run %v with a fence above %d", g, taker, old.Fence)
		}
		got := drain()
		if len(got) != 2 {
			t.Fatalf("notifications = %q, want 2 (acquired, preempted)", got)
		}
		ev, err := data.DecodeEvent(got[1])
		if err != nil {
			t.Fatal(err)
		}
		want := data.Event{Kind: data.KindPreempted, Key: k, RunID: data.PublicRunID(taker), PrevRunID: data.PublicRunID(victim),
			Fence: g.Fence, PrevFence: old.Fence, Holder: "phone", PrevHolder: "desktop", Reason: "user moved to the phone"}
		if ev.Kind != want.Kind || ev.Key != want.Key || ev.RunID != want.RunID || ev.PrevRunID != want.PrevRunID ||
			ev.Fence != want.Fence || ev.PrevFence != want.PrevFence || ev.Holder != want.Holder ||
			ev.PrevHolder != want.PrevHolder || ev.Reason != want.Reason || ev.Actor == "" {
			t.Errorf("preempted notification = %+v, want %+v and an actor", ev, want)
		}
		rows := events(t, s)
		if last := rows[len(rows)-1]; last.ID != ev.ID || last.PrevHolder != "desktop" || last.Reason != want.Reason {
			t.Errorf("last event row = %+v, want the notified one %+v", last, ev)
		}
		l, _, ok, err := s.Lease(ctx, k)
		if err != nil || !ok || l.RunID != data.PublicRunID(taker) || l.NotPreemptible || l.Attachment != "" {
			t.Errorf("lease after the preempt = %+v (found %v, %v), want the taker's, preemptible, without the victim's attachment", l, ok, err)
		}
		if _, err := s.Renew(ctx, k, victim, time.Hour); !errors.Is(err, data.ErrNotHeld) {
			t.Errorf("the preempted run's Renew = %v, want ErrNotHeld", err)
		}
		err = pgx.BeginFunc(ctx, db.Conn(t), func(tx pgx.Tx) error { return data.CheckFence(ctx, tx, k, victim, old.Fence) })
		if !errors.Is(err, data.ErrNotHeld) {
			t.Errorf("the preempted run's CheckFence = %v, want ErrNotHeld", err)
		}
	})
}

// TestPreemptOfFreeOrExpiredKeyIsAGrant: nobody is preempted when nobody
// holds the key: a free key is acquired, an expired lease taken over, and no
// preempted event is written. A retried preempt returns its own lease.
func TestPreemptOfFreeOrExpiredKeyIsAGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	k := data.Key{Account: "acme", Session: "free"}
	a, b := uuid.New(), uuid.New()
	g, err := s.Preempt(ctx, k, a, time.Millisecond, "a", "why", data.AcquireOptions{})
	if err != nil {
		t.Fatalf("Preempt of a free key: %v", err)
	}
	pgtest.WaitServerPast(t, conn, g.ExpiresAt)
	g2, err := s.Preempt(ctx, k, b, time.Hour, "b", "why", data.AcquireOptions{})
	if err != nil || g2.Fence <= g.Fence {
		t.Fatalf("Preempt of an expired lease = %+v, %v; want a grant with a fence above %d", g2, err, g.Fence)
	}
	again, err := s.Preempt(ctx, k, b, time.Hour, "b", "why", data.AcquireOptions{})
	if err != nil || again.Fence != g2.Fence {
		t.Fatalf("retried Preempt = %+v, %v; want its own grant, fence %d", again, err, g2.Fence)
	}
	want := []data.Kind{data.KindAcquired, data.KindTakenOver}
	if got := kinds(events(t, s)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// TestPreemptOfNotPreemptibleHolderIsRefused: a holder that declared at
// acquire that it must not be preempted keeps its lease; the refusal says
// so (ErrNotPreemptible, and an ErrHeld naming the holder) and writes
// nothing: no event, no change of the row.
func TestPreemptOfNotPreemptibleHolderIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "payment"}
	holder := uuid.New()
	g, err := s.AcquireWith(ctx, k, holder, time.Hour, "checkout", data.AcquireOptions{NotPreemptible: true, Attachment: "pay-42"})
	if err != nil {
		t.Fatal(err)
	}
	before := events(t, s)
	lBefore, _, _, _ := s.Lease(ctx, k)
	_, err = s.Preempt(ctx, k, uuid.New(), time.Hour, "phone", "impatient", data.AcquireOptions{})
	var held *data.HeldError
	if !errors.Is(err, data.ErrNotPreemptible) || !errors.As(err, &held) {
		t.Fatalf("Preempt of a not-preemptible holder = %v, want ErrNotPreemptible with a *HeldError", err)
	}
	if held.RunID != data.PublicRunID(holder) || held.Preemptible || held.Attachment != "pay-42" || held.Holder != "checkout" {
		t.Errorf("HeldError = %+v, want the holder, not preemptible, its attachment", held)
	}
	if after := events(t, s); len(after) != len(before) {
		t.Errorf("the refused preempt wrote events %v", kinds(after[len(before):]))
	}
	lAfter, _, ok, err := s.Lease(ctx, k)
	if err != nil || !ok || lAfter != lBefore || lAfter.Fence != g.Fence || !lAfter.NotPreemptible {
		t.Errorf("lease after the refusal = %+v, want it unchanged %+v", lAfter, lBefore)
	}
	// A plain Try is refused with the same details.
	_, err = s.Acquire(ctx, k, uuid.New(), time.Hour, "phone")
	if !errors.As(err, &held) || held.Preemptible || held.Attachment != "pay-42" {
		t.Errorf("Acquire refusal = %v, want a HeldError saying not preemptible, attachment pay-42", err)
	}
}

// TestRacingPreempts: in each round a holder is inside a fenced
// transaction (its row locked FOR SHARE) while 8 preempts from independent
// connections queue behind it for the same holder. When it commits, exactly
// one preempt wins with a fence above the holder's; every other one is
// refused with an ErrHeld naming the winner, and the history has one
// preempted event for the round.
func TestRacingPreempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	const racers, rounds = 8, 5
	stores := make([]*data.Store, racers)
	for i := range stores {
		stores[i] = db.Store(t) // each its own pool: independent connections
	}
	s, conn, holderConn := db.Store(t), db.Conn(t), db.Conn(t)
	k := data.Key{Account: "race", Session: "preempt"}
	owner := uuid.New()
	g := mustAcquire(t, s, k, owner, time.Hour)
	for round := range rounds {
		tx, err := holderConn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := data.CheckFence(ctx, tx, k, owner, g.Fence); err != nil {
			t.Fatalf("round %d: the holder's CheckFence: %v", round, err)
		}
		runs := make([]uuid.UUID, racers)
		grants := make([]data.Grant, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			runs[i] = uuid.New()
			wg.Go(func() {
				grants[i], errs[i] = stores[i].Preempt(ctx, k, runs[i], time.Hour, fmt.Sprintf("racer %d", i), "race", data.AcquireOptions{})
			})
		}
		pgtest.Eventually(t, time.Minute, fmt.Sprintf("round %d: %d preempts waiting for the holder's row", round, racers), func() bool {
			var n int
			err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%lease.preempt%'`).Scan(&n)
			return err == nil && n == racers
		})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		winner := -1
		for i := range racers {
			if errs[i] == nil {
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both won", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no racer won: %v", round, errs)
		}
		if grants[winner].Fence <= g.Fence {
			t.Errorf("round %d: the winner's fence %d, want above the holder's %d", round, grants[winner].Fence, g.Fence)
		}
		for i, err := range errs {
			var held *data.HeldError
			if i != winner && (!errors.As(err, &held) || held.RunID != data.PublicRunID(runs[winner])) {
				t.Errorf("round %d: loser %d got %v, want ErrHeld naming the winner %v", round, i, err, data.PublicRunID(runs[winner]))
			}
		}
		evs, err := s.EventsFor(ctx, k, 2)
		if err != nil {
			t.Fatal(err)
		}
		if evs[0].Kind != data.KindPreempted || evs[0].RunID != data.PublicRunID(runs[winner]) ||
			evs[0].PrevRunID != data.PublicRunID(owner) || evs[1].Fence != g.Fence {
			t.Errorf("round %d: last events %+v, want one preempted by the winner of the previous holder", round, evs)
		}
		owner, g = runs[winner], grants[winner]
	}
}

// TestAttachment: a holder publishes an attachment at acquire and replaces
// it later (holder only); readers and refused acquirers see it; text with
// control, bidirectional or invisible characters is refused by the library
// and by the database, and nothing is written; a takeover does not inherit
// the previous holder's attachment or preemptibility.
func TestAttachment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	reader := pgtest.OpenStore(t, db.ReaderURL(t), data.Options{})
	k := data.Key{Account: "acme", Session: "attach"}
	run := uuid.New()
	g, err := s.AcquireWith(ctx, k, run, time.Second, "desktop", data.AcquireOptions{NotPreemptible: true, Attachment: "stream-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAttachment(ctx, k, run, "stream-2"); err != nil {
		t.Fatalf("SetAttachment by the holder: %v", err)
	}
	if err := s.SetAttachment(ctx, k, uuid.New(), "stream-3"); !errors.Is(err, data.ErrNotHeld) {
		t.Errorf("SetAttachment by another run = %v, want ErrNotHeld", err)
	}
	snap, err := reader.Snapshot(ctx)
	if err != nil {
		t.Fatalf("lease_reader's Snapshot: %v", err)
	}
	if len(snap.Leases) != 1 || snap.Leases[0].Attachment != "stream-2" || !snap.Leases[0].NotPreemptible {
		t.Errorf("lease_reader sees %+v, want attachment stream-2, not preemptible", snap.Leases)
	}
	for _, bad := range []string{"a\x1b[31mb", "a\u202eb", "a\u200bb", "a\nb", strings.Repeat("x", data.MaxAttachmentBytes+1)} {
		if err := s.SetAttachment(ctx, k, run, bad); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("SetAttachment(%+q) = %v, want ErrInvalid", bad, err)
		}
		if _, err := s.AcquireWith(ctx, data.Key{Account: "acme", Session: "other"}, uuid.New(), time.Minute, "", data.AcquireOptions{Attachment: bad}); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("AcquireWith(attachment %+q) = %v, want ErrInvalid", bad, err)
		}
		// The database refuses it too, whoever calls.
		var ok bool
		err := conn.QueryRow(ctx, `SELECT lease.set_attachment($1, $2, $3, $4)`, k.Account, k.Session, run, bad).Scan(&ok)
		if !errors.Is(data.Translate(err), data.ErrInvalid) {
			t.Errorf("lease.set_attachment(%+q) = %v, %v; want SQLSTATE 22023", bad, ok, err)
		}
		err = conn.QueryRow(ctx, `SELECT count(*) FROM lease.acquire_with('acme', 'other2', gen_random_uuid(), '1 min', '', true, $1)`, bad).Scan(new(int))
		if !errors.Is(data.Translate(err), data.ErrInvalid) {
			t.Errorf("lease.acquire_with(attachment %+q) = %v; want SQLSTATE 22023", bad, err)
		}
	}
	if l, _, _, _ := s.Lease(ctx, k); l.Attachment != "stream-2" {
		t.Errorf("attachment after the refusals = %q, want stream-2", l.Attachment)
	}
	if snap, _ := s.Snapshot(ctx); len(snap.Leases) != 1 {
		t.Errorf("the refused acquires wrote leases: %+v", snap.Leases)
	}
	pgtest.WaitServerPast(t, conn, g.ExpiresAt)
	mustAcquire(t, s, k, uuid.New(), time.Minute)
	if l, _, _, _ := s.Lease(ctx, k); l.Attachment != "" || l.NotPreemptible {
		t.Errorf("after a plain takeover the lease = %+v, want preemptible without attachment", l)
	}
}

// TestPreemptNeedsLeasePreempt: a lease_app login that is not a member of
// lease_preempt cannot take an unexpired lease by any SQL path: the
// function itself, writing the table, the internal helpers, labelling its
// own acquire as a preempt, becoming a role that may. The functions it may
// execute are exactly lease_app's; afterwards the holder holds with its
// fence and the history has no preempted event. A member of lease_preempt
// (and lease_app) may.
func TestPreemptNeedsLeasePreempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "guarded"}
	holder := uuid.New()
	g := mustAcquire(t, s, k, holder, time.Hour)
	app, login := connectAs(t, db, "lease_app")

	for name, sql := range map[string]string{
		"preempt":             `SELECT * FROM lease.preempt('acme', 'guarded', gen_random_uuid(), '1 hour', 'x', 'y')`,
		"preempt all args":    `SELECT * FROM lease.preempt('acme', 'guarded', gen_random_uuid(), '1 hour', 'x', 'y', true, NULL)`,
		"update":              `UPDATE lease.session_lease SET run_id = gen_random_uuid(), expires_at = now() + interval '1 hour'`,
		"update fence":        `UPDATE lease.session_lease SET fence = fence + 1`,
		"insert":              `INSERT INTO lease.session_lease VALUES ('acme','x',gen_random_uuid(),'',1,now(),now(),now())`,
		"delete":              `DELETE FROM lease.session_lease`,
		"trigger function":    `SELECT lease.on_session_lease_change()`,
		"holder options":      `SELECT lease.check_holder_options(true, NULL)`,
		"failover helper":     `SELECT lease.move_past_failover()`,
		"fence sequence":      `SELECT nextval('lease.fence_seq')`,
		"set role preempt":    `SET ROLE lease_preempt`,
		"set role owner":      `SET ROLE lease_owner`,
		"set role admin":      `SET ROLE lease_admin`,
		"alter own role":      fmt.Sprintf(`GRANT lease_preempt TO %s`, pgx.Identifier{login}.Sanitize()),
		"create in schema":    `CREATE FUNCTION lease.p() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
		"write the event log": `INSERT INTO lease.event (at, kind) VALUES (now(), 'preempted')`,
	} {
		_, err := app.Exec(ctx, sql)
		if !isDenied(err) {
			t.Errorf("lease_app %s: err = %v, want permission denied", name, err)
		}
	}
	// Its own calls, labelled as a preempt would label them, take nothing.
	for name, sql := range map[string]string{
		"acquire":      `SELECT count(*) FROM lease.acquire('acme', 'guarded', gen_random_uuid(), '1 hour', 'x')`,
		"acquire_with": `SELECT count(*) FROM lease.acquire_with('acme', 'guarded', gen_random_uuid(), '1 hour', 'x', true, NULL)`,
	} {
		var n int
		err := pgx.BeginFunc(ctx, app, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', 'preempt', true), set_config('lease.reason', 'forged', true)`); err != nil {
				return err
			}
			return tx.QueryRow(ctx, sql).Scan(&n)
		})
		if err != nil || n != 0 {
			t.Errorf("lease_app %s labelled as a preempt = %d rows, %v; want 0 rows", name, n, err)
		}
	}
	// The functions it may execute: exactly lease_app's.
	rows, err := app.Query(ctx, `SELECT p.proname FROM pg_proc p
		WHERE p.pronamespace = 'lease'::regnamespace AND has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ack_message", "ack_messages", "acquire", "acquire_quiet", "acquire_with", "ask_handover", "cancel_ticket", "check_fence", "decline_handover", "enqueue",
		"hand_over", "message_state", "notify_event", "notify_renewals", "pending_key", "preempt_pending", "preempt_stopped", "receive_messages", "release", "release_quiet", "renew", "renew_many",
		"renew_ticket", "send_message", "set_attachment", "withdraw_handover"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lease_app may execute %v, want %v", got, want)
	}
	if run, fence, ok := leaseOf(t, db.Conn(t), k); !ok || run != data.PublicRunID(holder) || fence != g.Fence {
		t.Errorf("after lease_app's attempts the lease is run %v fence %d (held %v), want %v fence %d",
			run, fence, ok, data.PublicRunID(holder), g.Fence)
	}
	for _, e := range events(t, s) {
		if e.Kind == data.KindPreempted {
			t.Errorf("lease_app's attempts wrote %+v", e)
		}
	}

	// A login in lease_app and lease_preempt may.
	dsn, preempter := pgtest.Login(t, db, "lease_app")
	if _, err := db.Conn(t).Exec(ctx, "GRANT lease_preempt TO "+pgx.Identifier{preempter}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	ps := pgtest.OpenStore(t, dsn, data.Options{})
	if _, err := ps.Preempt(ctx, k, uuid.New(), time.Hour, "ops", "allowed", data.AcquireOptions{}); err != nil {
		t.Fatalf("Preempt by a member of lease_preempt: %v", err)
	}
	if evs, _ := s.EventsFor(ctx, k, 1); len(evs) != 1 || evs[0].Kind != data.KindPreempted || evs[0].Actor != preempter {
		t.Errorf("last event = %+v, want preempted with actor %s", evs, preempter)
	}
	// lease_app alone is told so by the library: ErrPermission.
	as := pgtest.OpenStore(t, pgURL(t, db), data.Options{})
	if _, err := as.Preempt(ctx, k, uuid.New(), time.Hour, "x", "y", data.AcquireOptions{}); !errors.Is(err, data.ErrPermission) ||
		!strings.Contains(err.Error(), "membership in the role lease_preempt") {
		t.Errorf("Store.Preempt as lease_app = %v, want ErrPermission saying it needs membership in lease_preempt", err)
	}
}

// pgURL is a new lease_app login's URL.
func pgURL(t *testing.T, db pgtest.DB) string {
	t.Helper()
	dsn, _ := pgtest.Login(t, db, "lease_app")
	return dsn
}

// TestPreemptLabelCannotBeForged: the trigger records preempted only for
// an unexpired lease replaced by lease.preempt. A lease_app caller that sets
// preempt's labels itself and takes over an expired lease is recorded as a
// takeover, without its reason.
func TestPreemptLabelCannotBeForged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s, conn := db.Store(t), db.Conn(t)
	app, _ := connectAs(t, db, "lease_app")
	k := data.Key{Account: "acme", Session: "forged"}
	g := mustAcquire(t, s, k, uuid.New(), time.Millisecond)
	pgtest.WaitServerPast(t, conn, g.ExpiresAt)
	err := pgx.BeginFunc(ctx, app, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lease.op', 'preempt', true), set_config('lease.reason', 'forged', true)`); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM lease.acquire('acme', 'forged', gen_random_uuid(), '1 hour', 'x')`).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("takeover: %d rows, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.EventsFor(ctx, k, 1)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Kind != data.KindTakenOver || evs[0].Reason != "" {
		t.Errorf("a takeover labelled as a preempt by its caller was recorded as %s (reason %q), want taken_over without a reason", evs[0].Kind, evs[0].Reason)
	}
}
