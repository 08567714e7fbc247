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

// TestMigrateFromVersion6 migrates a real version-6 schema (testdata/v6:
// git show 2771023:sql/<file>) with a live lease and history in place: no
// table is rewritten, the history is unchanged (its rows name no message),
// the holder renews; what version 7 adds is there: a message sent to the
// live lease's conversation reaches its holder, who acknowledges it, and
// the history records both. A second migrate changes nothing.
func TestMigrateFromVersion6(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createAsOwner(t, conn, 6)
	run := uuid.New()
	k := data.Key{Account: "acme", Session: "live"}
	var fence int64
	if err := conn.QueryRow(ctx, `SELECT fence FROM lease.acquire($1, $2, $3, '1 hour', 'desktop')`,
		k.Account, k.Session, run).Scan(&fence); err != nil {
		t.Fatalf("version 6 acquire: %v", err)
	}
	files := tableFiles(t, conn)
	var before int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&before); err != nil {
		t.Fatal(err)
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
	after := tableFiles(t, conn)
	for name, file := range files {
		if after[name] != file {
			t.Errorf("%s's file is %d after the migration, %d before: rewritten", name, after[name], file)
		}
	}
	var events, named int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(message_id) FROM lease.event`).Scan(&events, &named); err != nil || events != before || named != 0 {
		t.Errorf("events after the migration = %d (%d naming a message), %v; want the %d there were, none naming one", events, named, err, before)
	}

	s := db.Store(t)
	if _, err := s.Renew(ctx, k, run, time.Hour); err != nil {
		t.Fatalf("the live holder's Renew after the migration: %v", err)
	}
	if _, err := s.SendMessage(ctx, k, data.MessageSteer, "also check March", "phone", "k1", time.Minute); err != nil {
		t.Fatalf("SendMessage after the migration: %v", err)
	}
	ms, err := s.ReceiveMessages(ctx, k, run, 0, data.MaxReceive)
	if err != nil || len(ms) != 1 || ms[0].Body != "also check March" {
		t.Fatalf("the holder's ReceiveMessages after the migration = %+v, %v; want the one steer", ms, err)
	}
	if out, err := s.AckMessage(ctx, k, run, ms[0].ID); err != nil || out != data.AckDone {
		t.Fatalf("AckMessage after the migration = %v, %v; want acked", out, err)
	}
	var kinds []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(kind::text ORDER BY id) FROM lease.event WHERE message_id = $1`, ms[0].ID).Scan(&kinds); err != nil ||
		len(kinds) != 3 || kinds[0] != "message_sent" || kinds[1] != "message_delivered" || kinds[2] != "message_acked" {
		t.Errorf("the message's history after the migration = %v, %v; want sent, delivered, acked", kinds, err)
	}
}

// TestMigrateFromVersion6RecordsEachTransitionOnce migrates a real version-6 schema (testdata/v6,
// main's sql/ at version 6) with a live lease in place. Version 7 moved the
// acquired and released events from the trigger into lease.acquire and
// lease.release: a lease acquired before the migration is released after it
// with exactly one released event, and a cycle after it records exactly its
// two events, once each.
func TestMigrateFromVersion6RecordsEachTransitionOnce(t *testing.T) {
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
