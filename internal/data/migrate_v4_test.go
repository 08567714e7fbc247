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

// createV4 builds the lease schema as version 4's migrate left it, the last
// whose lease table checked its texts with CHECKs, from testdata/v4 (git
// show b3e7df6:sql/<file>).
func createV4(t testing.TB, conn *pgx.Conn) { createAsOwner(t, conn, 4) }

// createAsOwner builds the lease schema of a version from 4 on from
// testdata/v<version> in that version's order: the prelude and members.sql
// as the superuser, the rest as lease_owner, which so owns every table and
// partition (a partition the superuser made would keep its owner: version
// 4's prelude hands over the tables, not a partitioned table's partitions).
func createAsOwner(t testing.TB, conn *pgx.Conn, version int) {
	t.Helper()
	ctx := context.Background()
	applyOld(t, conn, version, "prelude.sql")
	if _, err := conn.Exec(ctx, `SET ROLE lease_owner`); err != nil {
		t.Fatal(err)
	}
	applyOld(t, conn, version, pgtest.OldOwnedFiles(version)...)
	if _, err := conn.Exec(ctx, `RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	applyOld(t, conn, version, "members.sql")
	if _, err := conn.Exec(ctx, `INSERT INTO lease.schema_version (version) VALUES ($1)`, version); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateFromVersion4 migrates a real version-4 schema with live leases
// and history to the texts' domains in place: the table keeps its file (no
// rewrite) and its CHECKs are gone; the leases keep their runs, fences,
// labels, attachments and expiries, and their holders renew and release;
// the history is unchanged; a bad label is refused by the domain; a second
// migrate changes nothing.
func TestMigrateFromVersion4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createV4(t, conn)
	plain, with := uuid.New(), uuid.New()
	kPlain, kWith := data.Key{Account: "acme", Session: "live"}, data.Key{Account: "acme", Session: "with attachment"}
	var fence int64
	var exp time.Time
	if err := conn.QueryRow(ctx, `SELECT fence, expires_at FROM lease.acquire($1, $2, $3, '1 hour', 'desktop')`,
		kPlain.Account, kPlain.Session, plain).Scan(&fence, &exp); err != nil {
		t.Fatalf("version 4 acquire: %v", err)
	}
	if _, err := conn.Exec(ctx, `SELECT * FROM lease.acquire_with($1, $2, $3, '1 hour', 'phone', false, 'stream-7')`,
		kWith.Account, kWith.Session, with); err != nil {
		t.Fatalf("version 4 acquire_with: %v", err)
	}
	var file uint32
	var before int
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = 'lease.session_lease'::regclass`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	var checks map[string]textCheck
	for i := range 2 {
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d from version 4: %v", i+1, err)
		}
		if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
			t.Fatalf("SchemaVersion after Migrate #%d = %d, %v; want %d", i+1, v, err, leasesql.Version)
		}
		got := textChecks(t, conn) // the domains' three, and no CHECK left on the table
		for name, c := range got {
			if !c.current || !c.validated {
				t.Errorf("after Migrate #%d %s: current %v, validated %v; want both", i+1, name, c.current, c.validated)
			}
			if checks != nil && checks[name].oid != c.oid {
				t.Errorf("Migrate #%d replaced %s again; want it left alone", i+1, name)
			}
		}
		checks = got
	}
	var after uint32
	var events int
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = 'lease.session_lease'::regclass`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != file {
		t.Errorf("lease.session_lease's file is %d after the migration, %d before: the table was rewritten", after, file)
	}
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
	if _, err := s.Acquire(ctx, kWith, uuid.New(), time.Minute, "bell\u0007"); err == nil {
		t.Error("an acquire with a control character in its label after the migration was granted")
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease (account_id, session_id, run_id, holder, fence, acquired_at, renewed_at, expires_at)
		VALUES ('acme', e'zero\u200bwidth', gen_random_uuid(), 'h', 1, now(), now(), now())`); err == nil {
		t.Error("the migrated table took a session id with U+200B written past the functions")
	}
}
