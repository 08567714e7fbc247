package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// toVersion2 turns a migrated database back into what version 2 left: no
// queue (tables, type, functions), the event kinds of version 2, version 2
// recorded. lease.acquire keeps its gate; version 2's did not read the
// queue, and Migrate replaces the function anyway.
const toVersion2 = `
DROP FUNCTION lease.enqueue, lease.renew_ticket, lease.cancel_ticket, lease.queue_admits,
              lease.queue_granted, lease.queue_place_of, lease.queue_event, lease.queue_limit;
DROP TABLE lease.queue_ticket, lease.session_queue;
DROP TYPE lease.queue_place;
ALTER DOMAIN lease.event_kind DROP CONSTRAINT event_kind_check;
ALTER DOMAIN lease.event_kind ADD CONSTRAINT event_kind_check CHECK (VALUE IN (
    'acquired', 'taken_over', 'released', 'force_released', 'renew_rejected', 'truncated'));
UPDATE lease.schema_version SET version = 2;`

// TestMigrateFromVersion2: a version-2 database with a live lease and its
// history migrates in place: the lease is kept (same run, fence, expiry)
// and its holder keeps renewing it, and the queue works at once. Migrating
// again changes nothing.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "live"}
	live := uuid.New()
	g := mustAcquire(t, s, k, live, time.Hour)
	if _, err := conn.Exec(ctx, toVersion2); err != nil {
		t.Fatalf("back to version 2: %v", err)
	}
	if v, err := data.SchemaVersion(ctx, conn); err != nil || v != 2 {
		t.Fatalf("SchemaVersion = %d, %v; want 2", v, err)
	}
	for i := range 2 {
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d from version 2: %v", i+1, err)
		}
		if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
			t.Fatalf("SchemaVersion after Migrate #%d = %d, %v; want %d", i+1, v, err, leasesql.Version)
		}
		run, fence, ok := leaseOf(t, conn, k)
		if !ok || run != data.PublicRunID(live) || fence != g.Fence {
			t.Fatalf("after Migrate #%d the lease is %v fence %d (held %v), want %v fence %d",
				i+1, run, fence, ok, data.PublicRunID(live), g.Fence)
		}
	}
	s2 := db.Store(t) // a fresh pool: the old one cached plans of the version-2 functions
	if _, err := s2.Renew(ctx, k, live, time.Hour); err != nil {
		t.Fatalf("the holder's renewal after the migration: %v", err)
	}
	if p, err := s2.Enqueue(ctx, k, uuid.New(), time.Minute, "waiter"); err != nil || p.Ahead != 0 || !p.Ticketed() {
		t.Fatalf("Enqueue after the migration = %+v, %v; want a ticket at the head", p, err)
	}
	if n := countKinds(events(t, s2), k, data.KindQueueJoined); n != 1 {
		t.Fatalf("%d queue_joined events after the migration, want 1", n)
	}
}
