package data_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// createV2 builds the lease schema as leasetop's version 2 left it, from the
// version-2 SQL files in testdata/v2 (git show 2acf346:sql/<file>), applied
// in version 2's order by the superuser.
func createV2(t testing.TB, conn *pgx.Conn) {
	createOld(t, conn, 2, "prelude.sql", "schema.sql", "functions.sql", "triggers.sql", "roles.sql", "members.sql")
}

// createOld builds the lease schema as leasetop's version left it: its SQL
// files in testdata/v<version>, applied in the given order by the superuser,
// and the version recorded.
func createOld(t testing.TB, conn *pgx.Conn, version int, files ...string) {
	t.Helper()
	applyOld(t, conn, version, files...)
	if _, err := conn.Exec(context.Background(), `INSERT INTO lease.schema_version (version) VALUES ($1)`, version); err != nil {
		t.Fatal(err)
	}
}

// applyOld applies files of testdata/v<version>, in the given order, as
// conn's current role.
func applyOld(t testing.TB, conn *pgx.Conn, version int, files ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("v%d", version), name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(b)); err != nil {
			t.Fatalf("version %d %s: %v", version, name, err)
		}
	}
}

// TestMigrateFromVersion2 migrates a real version-2 schema with a live
// lease and history in place: the lease keeps its run, fence, label and
// expiry, becomes preemptible without attachment, and its holder keeps
// renewing; the history is unchanged and takes the new kind; a second
// migrate changes nothing.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createV2(t, conn)
	live := uuid.New()
	k := data.Key{Account: "acme", Session: "live"}
	var fence int64
	var exp time.Time
	if err := conn.QueryRow(ctx, `SELECT fence, expires_at FROM lease.acquire('acme', 'live', $1, '1 hour', 'desktop')`, live).Scan(&fence, &exp); err != nil {
		t.Fatalf("version 2 acquire: %v", err)
	}
	for i := range 2 {
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d from version 2: %v", i+1, err)
		}
		if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
			t.Fatalf("SchemaVersion after Migrate #%d = %d, %v; want %d", i+1, v, err, leasesql.Version)
		}
	}
	s := db.Store(t)
	l, _, ok, err := s.Lease(ctx, k)
	if err != nil || !ok {
		t.Fatalf("the live lease after the migration: found %v, %v", ok, err)
	}
	if l.RunID != data.PublicRunID(live) || l.Fence != fence || l.Holder != "desktop" || !l.ExpiresAt.Equal(exp) ||
		l.NotPreemptible || l.Attachment != "" {
		t.Errorf("the live lease after the migration = %+v, want run %v fence %d, preemptible, no attachment",
			l, data.PublicRunID(live), fence)
	}
	if evs := events(t, s); len(evs) != 1 || evs[0].Kind != data.KindAcquired {
		t.Errorf("history after the migration = %v, want the one acquired event", kinds(evs))
	}
	if _, err := s.Renew(ctx, k, live, time.Hour); err != nil {
		t.Fatalf("the live holder's Renew after the migration: %v", err)
	}
	// The hand-over's table, functions and kinds are there too: an ask on
	// the migrated lease is recorded (handover_asked) and refused to a second asker.
	if a, err := s.AskHandover(ctx, k, uuid.New(), time.Minute, "tablet"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover after the migration = %+v, %v; want asked", a, err)
	}
	g, err := s.Preempt(ctx, k, uuid.New(), time.Hour, "phone", "moved", data.AcquireOptions{})
	if err != nil || g.Fence <= fence {
		t.Fatalf("Preempt after the migration = %+v, %v; want a grant above fence %d", g, err, fence)
	}
	if evs, _ := s.EventsFor(ctx, k, 1); len(evs) != 1 || evs[0].Kind != data.KindPreempted || evs[0].PrevHolder != "desktop" {
		t.Errorf("last event after the migration = %+v, want preempted of desktop", evs)
	}
	if _, err := s.Renew(ctx, k, live, time.Hour); !errors.Is(err, data.ErrNotHeld) {
		t.Errorf("the preempted holder's Renew = %v, want ErrNotHeld", err)
	}
}
