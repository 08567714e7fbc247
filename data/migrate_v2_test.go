package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestMigrateFromVersion2 turns a migrated database back into what version
// 2 had (no hand-over table, type or functions; the event kinds of version
// 2 only), with a live lease, and migrates it: the lease and its history
// stay, the live holder keeps renewing, and the hand-over kinds can be
// written.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "v2"}
	holder := uuid.New()
	g := mustAcquire(t, s, k, holder, time.Hour)
	if _, err := conn.Exec(ctx, `
		DROP FUNCTION lease.ask_handover, lease.hand_over, lease.decline_handover, lease.withdraw_handover,
		              lease.handover_event, lease.handover_end, lease.handover_answer_of;
		DROP TABLE lease.handover_ask;
		DROP TYPE lease.handover_answer;
		ALTER DOMAIN lease.event_kind DROP CONSTRAINT event_kind_check;
		ALTER DOMAIN lease.event_kind ADD CONSTRAINT event_kind_check CHECK (VALUE IN (
			'acquired', 'taken_over', 'released', 'force_released', 'renew_rejected', 'truncated'));
		UPDATE lease.schema_version SET version = 2`); err != nil {
		t.Fatalf("make the database version 2: %v", err)
	}
	before := len(events(t, s))
	if err := data.Migrate(ctx, conn); err != nil {
		t.Fatalf("Migrate from version 2: %v", err)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT version FROM lease.schema_version`).Scan(&v); err != nil || v != 3 {
		t.Fatalf("version = %d, %v; want 3", v, err)
	}
	if run, fence, ok := leaseOf(t, conn, k); !ok || run != data.PublicRunID(holder) || fence != g.Fence {
		t.Fatalf("lease after migrating = %s fence %d (%v), want the holder's", run, fence, ok)
	}
	if got := len(events(t, s)); got != before {
		t.Fatalf("%d events after migrating, want %d", got, before)
	}
	s2 := db.Store(t) // a fresh store: the old one's prepared statements name the dropped type
	if _, err := s2.Renew(ctx, k, holder, time.Hour); err != nil {
		t.Fatalf("the holder's Renew after migrating: %v", err)
	}
	if a, err := s2.AskHandover(ctx, k, uuid.New(), time.Minute, "phone"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover after migrating = %+v, %v; want asked", a, err)
	}
	if err := data.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrating again: %v", err)
	}
}
