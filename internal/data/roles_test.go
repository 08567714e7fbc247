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

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// connectAs logs in as a new member of group ("": of no role, so it has
// only what PUBLIC has: CONNECT) and returns the connection, closed when the
// test ends, and the login's name.
func connectAs(t *testing.T, db pgtest.DB, group string) (*pgx.Conn, string) {
	t.Helper()
	ctx := context.Background()
	dsn, login := pgtest.Login(t, db, group)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect as %s: %v", login, err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn, login
}

func isDenied(err error) bool {
	return errors.Is(data.Translate(err), data.ErrPermission)
}

// TestRoleBoundaries logs in as each role and proves what it may and may not
// do.
func TestRoleBoundaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	k := data.Key{Account: "a", Session: "s"}
	held := uuid.New()
	mustAcquire(t, owner, k, held, time.Minute)

	type step struct {
		sql     string
		allowed bool
	}
	steps := func(run uuid.UUID) map[string]step {
		return map[string]step{
			"select leases":  {`SELECT count(*) FROM lease.session_lease`, true},
			"select events":  {`SELECT count(*) FROM lease.event`, true},
			"acquire":        {fmt.Sprintf(`SELECT * FROM lease.acquire('a', 'other', '%s', '1 min', '')`, run), true},
			"renew":          {fmt.Sprintf(`SELECT lease.renew('a', 'other', '%s', '1 min')`, run), true},
			"release":        {fmt.Sprintf(`SELECT lease.release('a', 'other', '%s')`, run), true},
			"force_release":  {fmt.Sprintf(`SELECT lease.force_release('a', 's', '%s', 'x')`, data.PublicRunID(held)), true},
			"direct insert":  {`INSERT INTO lease.session_lease VALUES ('a','x',gen_random_uuid(),'',1,now(),now(),now())`, false},
			"direct update":  {`UPDATE lease.session_lease SET run_id = gen_random_uuid()`, false},
			"direct delete":  {`DELETE FROM lease.session_lease`, false},
			"truncate":       {`TRUNCATE lease.session_lease`, false},
			"rewrite events": {`DELETE FROM lease.event`, false},
			"prune events":   {`SELECT lease.prune_events('0')`, false},
			"notify setting": {`SELECT lease.set_notify_renewals(true)`, false},
			"fence nextval":  {`SELECT nextval('lease.fence_seq')`, false},
			"fence setval":   {`SELECT setval('lease.fence_seq', 1)`, false},
			"public_run_id":  {`SELECT lease.public_run_id(gen_random_uuid())`, false},
		}
	}
	allow := map[string]map[string]bool{
		"lease_reader": {"select leases": true, "select events": true},
		"lease_app":    {"select leases": true, "select events": true, "acquire": true, "renew": true, "release": true},
		"lease_admin":  {"select leases": true, "select events": true, "acquire": true, "renew": true, "release": true, "force_release": true},
	}
	for _, role := range []string{"lease_reader", "lease_app", "lease_admin"} {
		t.Run(role, func(t *testing.T) {
			conn, _ := connectAs(t, db, role)
			for name, st := range steps(uuid.New()) {
				_, err := conn.Exec(ctx, st.sql)
				want := allow[role][name]
				switch {
				case want && err != nil:
					t.Errorf("%s: %s err = %v, want allowed", role, name, err)
				case !want && !isDenied(err):
					t.Errorf("%s: %s err = %v, want permission denied (42501)", role, name, err)
				}
			}
		})
	}
}

// TestPublicHasNoRights: a login role in no lease group can do nothing.
func TestPublicHasNoRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn, _ := connectAs(t, db, "")
	for _, sql := range []string{
		`SELECT count(*) FROM lease.session_lease`,
		`SELECT * FROM lease.acquire('a', 's', gen_random_uuid(), '1 min', '')`,
	} {
		if _, err := conn.Exec(ctx, sql); !isDenied(err) {
			t.Errorf("%s as a role without lease grants: err = %v, want permission denied", sql, err)
		}
	}
}

// TestForcedReleaseRecordsLoginRole: the actor is the login role, not the
// function's owner.
func TestForcedReleaseRecordsLoginRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	k := data.Key{Account: "a", Session: "s"}
	mustAcquire(t, owner, k, uuid.New(), time.Minute)
	dsn, login := pgtest.Login(t, db, "lease_admin")
	admin, err := data.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if ok, err := admin.ForceReleaseAny(ctx, k, "INC-7"); err != nil || !ok {
		t.Fatalf("ForceRelease as %s = %v, %v", login, ok, err)
	}
	evs := events(t, owner)
	last := evs[len(evs)-1]
	if last.Kind != data.KindForceReleased || last.Actor != login || last.Reason != "INC-7" {
		t.Fatalf("event = %s by %q (%q), want force_released by %q (INC-7)", last.Kind, last.Actor, last.Reason, login)
	}
}

// TestConnectOnlySeesOnlyPublicIDs: a role with nothing but CONNECT may
// LISTEN on lease_events (PostgreSQL has no privilege for it), so it reads
// every payload: what it learns of a run is its public id, never the secret
// the run renews, releases and fence-checks with.
func TestConnectOnlySeesOnlyPublicIDs(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	listener, login := connectAs(t, db, "")
	drain := collect(t, listener, db.Conn(t))
	secret := uuid.New()
	mustAcquire(t, db.Store(t), data.Key{Account: "acme", Session: "s"}, secret, time.Minute)
	got := drain()
	if len(got) != 1 {
		t.Fatalf("%s heard %d notifications, want the acquire's", login, len(got))
	}
	ev, err := data.DecodeEvent(got[0])
	if err != nil || ev.RunID != data.PublicRunID(secret) || strings.Contains(got[0], secret.String()) {
		t.Errorf("%s heard %s (%v), want the public run id %v and never the secret", login, got[0], err, data.PublicRunID(secret))
	}
}
