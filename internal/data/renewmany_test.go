package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// One RenewMany call decides every lease as Renew would, each alone: the
// run's own unexpired leases are renewed (a key named twice too), and a lease
// taken over, one force-released and one expired are rejected without
// holding back the rest, each recorded as a renew_rejected zombie with the
// reason Renew gives; a run that never held its key and the nil run id are
// rejected and write nothing.
func TestRenewManyDecidesEachLeaseAlone(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	key := func(name string) data.Key { return data.Key{Account: "acct", Session: name} }
	runs := map[string]uuid.UUID{}
	for _, name := range []string{"held-1", "held-2", "stolen", "forced", "expired", "stranger"} {
		runs[name] = uuid.New()
	}
	mustAcquire(t, s, key("held-1"), runs["held-1"], time.Minute)
	mustAcquire(t, s, key("held-2"), runs["held-2"], time.Minute)
	mustAcquire(t, s, key("stolen"), runs["stolen"], 50*time.Millisecond)
	mustAcquire(t, s, key("forced"), runs["forced"], time.Minute)
	mustAcquire(t, s, key("expired"), runs["expired"], 50*time.Millisecond)
	mustAcquire(t, s, key("stranger"), uuid.New(), time.Minute) // held by another run all along
	pgtest.WaitExpired(t, conn, key("stolen"))
	pgtest.WaitExpired(t, conn, key("expired"))
	thief := uuid.New()
	stolen := mustAcquire(t, s, key("stolen"), thief, time.Minute)
	if ok, err := s.ForceReleaseAny(ctx, key("forced"), "test"); err != nil || !ok {
		t.Fatalf("ForceReleaseAny = %v, %v", ok, err)
	}
	before := len(events(t, s))

	items := []data.RenewItem{
		{key("held-1"), runs["held-1"]},
		{key("stolen"), runs["stolen"]},
		{key("forced"), runs["forced"]},
		{key("held-2"), runs["held-2"]},
		{key("expired"), runs["expired"]},
		{key("stranger"), runs["stranger"]},
		{key("held-1"), uuid.Nil},
		{key("held-1"), runs["held-1"]},
	}
	got, err := s.RenewMany(ctx, time.Hour, items)
	if err != nil {
		t.Fatalf("RenewMany: %v", err)
	}
	if len(got) != len(items) {
		t.Fatalf("RenewMany returned %d renewals for %d items", len(got), len(items))
	}
	renewed := map[int]bool{0: true, 3: true, 7: true}
	for k, r := range got {
		switch {
		case renewed[k] && (r.Err != nil || time.Until(r.ExpiresAt) < 50*time.Minute):
			t.Errorf("item %d (%s): %v, expiry %v; want renewed for an hour", k, items[k].Key, r.Err, r.ExpiresAt)
		case !renewed[k] && !errors.Is(r.Err, data.ErrNotHeld):
			t.Errorf("item %d (%s): %v, expiry %v; want ErrNotHeld", k, items[k].Key, r.Err, r.ExpiresAt)
		}
	}
	if !got[0].ExpiresAt.Equal(got[7].ExpiresAt) {
		t.Errorf("the key named twice got expiries %v and %v, want one", got[0].ExpiresAt, got[7].ExpiresAt)
	}
	if run, fence, ok := leaseOf(t, conn, key("stolen")); !ok || run != data.PublicRunID(thief) || fence != stolen.Fence {
		t.Errorf("the stolen key is %v fence %d (held %v), want the thief's %v fence %d", run, fence, ok, data.PublicRunID(thief), stolen.Fence)
	}
	var thiefExpiry time.Time
	if err := conn.QueryRow(ctx, `SELECT expires_at FROM lease.session_lease WHERE session_id = 'stolen'`).Scan(&thiefExpiry); err != nil || !thiefExpiry.Equal(stolen.ExpiresAt) {
		t.Errorf("the thief's expiry is %v (%v), want it untouched at %v", thiefExpiry, err, stolen.ExpiresAt)
	}

	want := map[string]string{
		"stolen":  "held by run " + data.PublicRunID(thief).String(),
		"forced":  "no lease",
		"expired": "lease expired",
	}
	evs := events(t, s)[before:]
	if len(evs) != len(want) {
		t.Fatalf("%d events after RenewMany (%v), want %d renew_rejected", len(evs), kinds(evs), len(want))
	}
	for _, e := range evs {
		w, ok := want[e.Key.Session]
		if !ok || e.Kind != data.KindRenewRejected || e.Reason != w || e.RunID != data.PublicRunID(runs[e.Key.Session]) {
			t.Errorf("event %s %s run %v reason %q; want renew_rejected of the zombie's public id, reason %q", e.Kind, e.Key, e.RunID, e.Reason, w)
		}
		delete(want, e.Key.Session)
	}
}

// A lease whose row another transaction has locked (a fenced write holding
// check_fence's FOR SHARE) is skipped, not waited for: the others in the
// batch are renewed at once and the busy one is ErrLocked, undecided; once
// the fenced write commits it renews again. Before, one UPDATE for the batch
// would wait behind the lock for every lease in it.
func TestRenewManySkipsALockedLease(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	busy, free := data.Key{Account: "acct", Session: "busy"}, data.Key{Account: "acct", Session: "free"}
	busyRun, freeRun := uuid.New(), uuid.New()
	g := mustAcquire(t, s, busy, busyRun, time.Minute)
	mustAcquire(t, s, free, freeRun, time.Minute)
	before := len(events(t, s))

	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if err := data.CheckFence(ctx, tx, busy, busyRun, g.Fence); err != nil {
		t.Fatalf("CheckFence: %v", err)
	}
	items := []data.RenewItem{{busy, busyRun}, {free, freeRun}}
	got, err := s.RenewMany(ctx, time.Hour, items)
	if err != nil {
		t.Fatalf("RenewMany while a fenced write holds %s: %v", busy, err)
	}
	if !errors.Is(got[0].Err, data.ErrLocked) {
		t.Errorf("the locked lease: %v, want ErrLocked", got[0].Err)
	}
	if got[1].Err != nil || time.Until(got[1].ExpiresAt) < 50*time.Minute {
		t.Errorf("the free lease: %v, expiry %v; want renewed for an hour", got[1].Err, got[1].ExpiresAt)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = s.RenewMany(ctx, time.Hour, items)
	if err != nil || got[0].Err != nil || got[1].Err != nil {
		t.Fatalf("RenewMany after the fenced write committed: %v, %+v; want both renewed", err, got)
	}
	if evs := events(t, s)[before:]; len(evs) != 0 {
		t.Errorf("events %v, want none: nothing was rejected", kinds(evs))
	}
}

// Bad input is refused as a whole, with nothing renewed: an invalid key, too
// many items, a TTL out of range (also on the database clock, from SQL), and
// arrays of different lengths.
func TestRenewManyRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	conn := db.Conn(t)
	k, run := data.Key{Account: "acct", Session: "s"}, uuid.New()
	g := mustAcquire(t, s, k, run, time.Minute)
	good := data.RenewItem{Key: k, RunID: run}

	for name, call := range map[string]func() error{
		"invalid key": func() error {
			_, err := s.RenewMany(ctx, time.Hour, []data.RenewItem{good, {Key: data.Key{Account: "acct", Session: "a\x1bb"}, RunID: run}})
			return err
		},
		"too many": func() error {
			_, err := s.RenewMany(ctx, time.Hour, make([]data.RenewItem, data.MaxRenewMany+1))
			return err
		},
		"ttl": func() error { _, err := s.RenewMany(ctx, 25*time.Hour, []data.RenewItem{good}); return err },
	} {
		if err := call(); !errors.Is(err, data.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for name, q := range map[string]string{
		"lengths":      `SELECT count(*) FROM lease.renew_many(ARRAY['acct', 'acct'], ARRAY['s'], ARRAY[$1::uuid], '1 hour')`,
		"ttl span":     `SELECT count(*) FROM lease.renew_many(ARRAY['acct'], ARRAY['s'], ARRAY[$1::uuid], '3000000 months -90000000 days 23 hours')`,
		"null ttl":     `SELECT count(*) FROM lease.renew_many(ARRAY['acct'], ARRAY['s'], ARRAY[$1::uuid], NULL)`,
		"null array":   `SELECT count(*) FROM lease.renew_many(NULL, ARRAY['s'], ARRAY[$1::uuid], '1 hour')`,
		"control char": `SELECT count(*) FROM lease.renew_many(ARRAY['acct', E'a\u202eb'], ARRAY['s', 's'], ARRAY[$1::uuid, $1::uuid], '1 hour')`,
	} {
		var n int
		err := conn.QueryRow(ctx, q, run).Scan(&n)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
			t.Errorf("%s: %v, want SQLSTATE 22023", name, err)
		}
	}
	var exp time.Time
	if err := conn.QueryRow(ctx, `SELECT expires_at FROM lease.session_lease`).Scan(&exp); err != nil || !exp.Equal(g.ExpiresAt) {
		t.Errorf("expiry after the refused calls %v (%v), want it unchanged at %v", exp, err, g.ExpiresAt)
	}
}

// A lease_app login that reads other runs' public ids from the table (as
// every lease_app may) and calls lease.renew_many with them renews nothing
// and records nothing: only the secret renews.
func TestRenewManyWithPublicIDsRenewsNothing(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	const n = 5
	for k := range n {
		mustAcquire(t, s, data.Key{Account: "victims", Session: fmt.Sprint(k)}, uuid.New(), time.Minute)
	}
	before := len(events(t, s))
	owner := db.Conn(t)
	var was time.Time
	if err := owner.QueryRow(ctx, `SELECT max(expires_at) FROM lease.session_lease`).Scan(&was); err != nil {
		t.Fatal(err)
	}

	app, login := connectAs(t, db, "lease_app")
	rows, err := app.Query(ctx, `
		SELECT r.i, r.expires_at
		  FROM (SELECT array_agg(account_id) a, array_agg(session_id) s, array_agg(run_id) r FROM lease.session_lease) t,
		       lease.renew_many(t.a, t.s, t.r, '1 hour') r`)
	if err != nil {
		t.Fatalf("renew_many as %s: %v", login, err)
	}
	var answered int
	for rows.Next() {
		var i int
		var exp *time.Time
		if err := rows.Scan(&i, &exp); err != nil {
			t.Fatal(err)
		}
		answered++
		if exp != nil {
			t.Errorf("renewal %d with a public id renewed a victim's lease to %v", i, exp)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("renew_many as %s: %v", login, err)
	}
	if answered != n {
		t.Errorf("%d answers, want %d rejections", answered, n)
	}
	var now time.Time
	if err := owner.QueryRow(ctx, `SELECT max(expires_at) FROM lease.session_lease`).Scan(&now); err != nil || !now.Equal(was) {
		t.Errorf("latest expiry %v (%v) after the attack, want unchanged %v", now, err, was)
	}
	if evs := events(t, s)[before:]; len(evs) != 0 {
		t.Errorf("the attack wrote events %v, want none (the public ids never held anything)", kinds(evs))
	}
}

// lease.renew_many's UPDATE is an index nested loop on the primary key at
// every batch size, with no sequential scan of the leases: at 1000 keys the
// planner's own choice would be a hash join that reads every lease. The plan
// is the one PL/pgSQL runs, logged by auto_explain as a notice.
func TestRenewManyPlanIsAnIndexNestedLoop(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `
		INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		SELECT 'bulk', g::text, lease.public_run_id(md5(g::text)::uuid), '', g, now(), now(), now() + interval '1 hour'
		  FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE lease.session_lease`); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 100, 1000} {
		plan := renewManyPlan(t, db, n)
		t.Logf("renew_many of %d keys among 5000 leases:\n%s", n, plan)
		if !strings.Contains(plan, "Nested Loop") || !strings.Contains(plan, "session_lease_pkey") {
			t.Errorf("renew_many of %d keys: no index nested loop on the primary key in its plan:\n%s", n, plan)
		}
		for _, bad := range []string{"Hash Join", "Merge Join", "Seq Scan on session_lease"} {
			if strings.Contains(plan, bad) {
				t.Errorf("renew_many of %d keys: plan has a %s:\n%s", n, bad, plan)
			}
		}
		if !strings.Contains(plan, fmt.Sprintf("rows=%d loops=1", n)) {
			t.Errorf("renew_many of %d keys did not renew them all:\n%s", n, plan)
		}
	}
}

// renewManyPlan renews n of the bulk leases with lease.renew_many on a new
// connection and returns the plan of its UPDATE, as auto_explain shows it.
func renewManyPlan(t *testing.T, db pgtest.DB, n int) string {
	t.Helper()
	ctx := context.Background()
	var plans []string
	cfg := db.Conn(t).Config().Copy()
	cfg.OnNotice = func(_ *pgconn.PgConn, nt *pgconn.Notice) {
		if strings.Contains(nt.Message, "UPDATE lease.session_lease") {
			plans = append(plans, nt.Message)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`LOAD 'auto_explain'`,
		`SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_timing = off`,
		`SET auto_explain.log_level = notice`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `
		SELECT count(*) FROM lease.renew_many(
			(SELECT array_agg('bulk'::text) FROM generate_series(1, $1)),
			(SELECT array_agg(g::text) FROM generate_series(1, $1) g),
			(SELECT array_agg(md5(g::text)::uuid) FROM generate_series(1, $1) g),
			'1 hour')`, n); err != nil {
		t.Fatalf("renew_many of %d keys: %v", n, err)
	}
	if len(plans) != 1 {
		t.Fatalf("renew_many of %d keys: %d UPDATE plans logged, want 1", n, len(plans))
	}
	return plans[0]
}
