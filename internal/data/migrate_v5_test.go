package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// createV5 builds the lease schema as version 5's migrate left it, from
// testdata/v5 (git show 93a9d7b:sql/<file>), as createV4 does.
func createV5(t testing.TB, conn *pgx.Conn) { createAsOwner(t, conn, 5) }

// tableFiles returns every lease table's file (relfilenode), by name.
func tableFiles(t *testing.T, conn *pgx.Conn) map[string]uint32 {
	t.Helper()
	return fileNodes(t, conn, `SELECT c.oid::regclass::text, c.relfilenode FROM pg_class c
		WHERE c.relnamespace = 'lease'::regnamespace AND c.relkind = 'r'`)
}

// TestMigrateFromVersion5 migrates a real version-5 schema with live leases
// and history in place: every table keeps its file (no rewrite), the leases
// keep their runs, fences, labels, attachments and expiries, their holders
// renew and release, the history is unchanged, and the domains' constraints
// are kept; a second migrate changes nothing. What version 6 changes is
// there: maintain runs one at a time on lease.maintenance's row (an
// advisory lock held by a CONNECT-only login no longer stops it) and
// lease_admin may still run it, notify_event falls back to the row, the
// lease types are no longer PUBLIC's to build on, and the failover floor's
// functions have their version-6 names, the old ones gone.
func TestMigrateFromVersion5(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createV5(t, conn)
	plain, with := uuid.New(), uuid.New()
	kPlain, kWith := data.Key{Account: "acme", Session: "live"}, data.Key{Account: "acme", Session: "with attachment"}
	var fence int64
	var exp time.Time
	if err := conn.QueryRow(ctx, `SELECT fence, expires_at FROM lease.acquire($1, $2, $3, '1 hour', 'desktop')`,
		kPlain.Account, kPlain.Session, plain).Scan(&fence, &exp); err != nil {
		t.Fatalf("version 5 acquire: %v", err)
	}
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire_with($1, $2, $3, '1 hour', 'phone', false, 'stream-7')`,
		kWith.Account, kWith.Session, with); err != nil {
		t.Fatalf("version 5 acquire_with: %v", err)
	}
	files := tableFiles(t, conn)
	var before int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	var checks map[string]textCheck
	for i := range 2 {
		from, err := data.MigrateWith(ctx, conn, data.MigrateOptions{})
		if err != nil {
			t.Fatalf("Migrate #%d from version 5: %v", i+1, err)
		}
		if want := []int{5, leasesql.Version}[i]; from != want {
			t.Errorf("Migrate #%d found version %d, want %d", i+1, from, want)
		}
		if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
			t.Fatalf("SchemaVersion after Migrate #%d = %d, %v; want %d", i+1, v, err, leasesql.Version)
		}
		got := textChecks(t, conn)
		for name, c := range got {
			if !c.current || !c.validated || (checks != nil && checks[name].oid != c.oid) {
				t.Errorf("after Migrate #%d %s: current %v, validated %v, replaced %v; want kept", i+1, name, c.current, c.validated, checks != nil && checks[name].oid != c.oid)
			}
		}
		checks = got
	}
	after := tableFiles(t, conn)
	for name, file := range files {
		if after[name] != file {
			t.Errorf("%s's file is %d after the migration, %d before: rewritten", name, after[name], file)
		}
	}
	var events int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&events); err != nil || events != before {
		t.Errorf("events after the migration = %d, %v; want the %d there were", events, err, before)
	}

	s := db.Store(t)
	l, _, ok, err := s.Lease(ctx, kPlain)
	if err != nil || !ok || l.RunID != data.PublicRunID(plain) || l.Fence != fence || l.Holder != "desktop" || !l.ExpiresAt.Equal(exp) {
		t.Fatalf("the live lease after the migration = %+v (found %v, %v), want run %v fence %d desktop", l, ok, err, data.PublicRunID(plain), fence)
	}
	if l, _, ok, err := s.Lease(ctx, kWith); err != nil || !ok || l.Attachment != "stream-7" || !l.NotPreemptible || l.Holder != "phone" {
		t.Errorf("the lease with an attachment after the migration = %+v (found %v, %v), want phone, not preemptible, stream-7", l, ok, err)
	}
	if _, err := s.Renew(ctx, kPlain, plain, time.Hour); err != nil {
		t.Fatalf("the live holder's Renew after the migration: %v", err)
	}
	if ok, err := s.Release(ctx, kWith, with); err != nil || !ok {
		t.Fatalf("the holder's Release after the migration = %v, %v", ok, err)
	}

	adminDSN, _ := pgtest.Login(t, db, "lease_admin")
	connectOnly, _ := pgtest.Login(t, db, "")
	if _, err := connect(t, connectOnly).Exec(ctx, `SELECT pg_advisory_lock(hashtext('lease.maintain_events'))`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgtest.OpenStore(t, adminDSN, data.Options{}).MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Errorf("a lease_admin's MaintainEvents after the migration, the old advisory lock held: %v", err)
	}
	var sent bool
	if err := connect(t, db.URL).QueryRow(ctx, `SELECT lease.notify_event(max(id)) FROM lease.event`).Scan(&sent); err != nil || !sent {
		t.Errorf("notify_event on a session that kept no payload = %v, %v; want the row sent", sent, err)
	}
	var public bool
	if err := conn.QueryRow(ctx, `SELECT has_type_privilege('public', 'lease.id_text', 'USAGE')`).Scan(&public); err != nil || public {
		t.Errorf("PUBLIC's USAGE on lease.id_text after the migration = %v, %v; want taken back", public, err)
	}
	for old, renamed := range map[string]string{
		"lease.follow_timeline()": "lease.follow_failover()", "lease.move_past_timeline()": "lease.move_past_failover()",
		"lease.timeline_floor()": "lease.failover_floor()",
	} {
		var gone, there bool
		if err := conn.QueryRow(ctx, `SELECT to_regprocedure($1) IS NULL, to_regprocedure($2) IS NOT NULL`, old, renamed).Scan(&gone, &there); err != nil || !gone || !there {
			t.Errorf("after the migration %s gone: %v, %s there: %v (%v); want the new name only", old, gone, renamed, there, err)
		}
	}
}
