package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestMigrateFromVersion6 migrates a real version-6 schema (testdata/v6,
// main's sql/ at version 6) with a live lease in place. Version 7 moved the
// acquired and released events from the trigger into lease.acquire and
// lease.release: a lease acquired before the migration is released after it
// with exactly one released event, and a cycle after it records exactly its
// two events, once each.
func TestMigrateFromVersion6(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewAtVersion(t, 6)
	conn := db.Conn(t)
	run := uuid.New()
	k := data.Key{Account: "acme", Session: "live at 6"}
	var fence int64
	if err := conn.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'desktop')`,
		k.Account, k.Session, run).Scan(&fence); err != nil {
		t.Fatalf("version 6 acquire: %v", err)
	}
	for i := range 2 {
		from, err := data.MigrateWith(ctx, conn, data.MigrateOptions{})
		if err != nil {
			t.Fatalf("Migrate #%d from version 6: %v", i+1, err)
		}
		if want := []int{6, leasesql.Version}[i]; from != want {
			t.Errorf("Migrate #%d found version %d, want %d", i+1, from, want)
		}
	}
	s := db.Store(t)
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Fatalf("Release of the lease acquired at version 6 = %v, %v; want true", ok, err)
	}
	next := uuid.New()
	if _, err := s.Acquire(ctx, k, next, time.Minute, "laptop"); err != nil {
		t.Fatalf("Acquire after the migration: %v", err)
	}
	if ok, err := s.Release(ctx, k, next); err != nil || !ok {
		t.Fatalf("Release after the migration = %v, %v; want true", ok, err)
	}
	evs, err := s.EventsFor(ctx, k, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Kind))
	}
	want := []string{"released", "acquired", "released", "acquired"} // newest first
	if len(got) != len(want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events = %v, want %v", got, want)
		}
	}
	if evs[3].Fence != fence || evs[2].Fence != fence || evs[1].Fence <= fence {
		t.Errorf("fences %d, %d, %d (oldest first, after the version-6 grant's), want %d, %d and a higher one",
			evs[3].Fence, evs[2].Fence, evs[1].Fence, fence, fence)
	}
}
