package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// partitionOf returns the partition that holds event id.
func partitionOf(t *testing.T, conn *pgx.Conn, id int64) string {
	t.Helper()
	var part string
	if err := conn.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM lease.event WHERE id = $1`, id).Scan(&part); err != nil {
		t.Fatalf("the partition of event %d: %v", id, err)
	}
	return part
}

// TestMissingPartitionNeverFailsATransition: with no partition
// for the current day, an acquire still succeeds and its event lands in
// lease.event_default; MaintainEvents then moves it, keeping its id, into a
// new partition of its day, where the next transition's event lands too.
func TestMissingPartitionNeverFailsATransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	pgtest.DropEventPartition(t, db, `coalesce(lo, '-infinity') <= clock_timestamp() AND hi > clock_timestamp()`)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "no-partition"}
	run := uuid.New()
	if _, err := s.Acquire(ctx, k, run, time.Minute, "desk"); err != nil {
		t.Fatalf("Acquire with no partition for today: %v", err)
	}
	evs := events(t, s)
	if len(evs) != 1 {
		t.Fatalf("history = %v, want the one acquired event", kinds(evs))
	}
	id := evs[0].ID
	if got := partitionOf(t, conn, id); got != "lease.event_default" {
		t.Fatalf("the event landed in %s, want lease.event_default", got)
	}
	changes, err := s.MaintainEvents(ctx, data.MaintainOptions{})
	if err != nil {
		t.Fatalf("MaintainEvents: %v", err)
	}
	var moved *data.PartitionChange
	for i, c := range changes {
		if c.Action == "moved" {
			moved = &changes[i]
		}
	}
	day := evs[0].At.UTC().Truncate(24 * time.Hour)
	if moved == nil || moved.Rows != 1 || !moved.From.Equal(day) || !moved.Until.Equal(day.Add(24*time.Hour)) {
		t.Fatalf("MaintainEvents = %+v, want one row moved to the partition of %v", changes, day)
	}
	if got := partitionOf(t, conn, id); got != moved.Partition {
		t.Errorf("event %d is in %s after the move, want %s", id, got, moved.Partition)
	}
	if _, err := s.Release(ctx, k, run); err != nil {
		t.Fatal(err)
	}
	evs = events(t, s)
	if len(evs) != 2 || evs[0].ID != id || evs[1].ID <= id {
		t.Fatalf("history after the move and a release = %v, want event %d then a higher id", evs, id)
	}
	if got := partitionOf(t, conn, evs[1].ID); got != moved.Partition {
		t.Errorf("the next event landed in %s, want %s", got, moved.Partition)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_default`).Scan(&left); err != nil || left != 0 {
		t.Errorf("lease.event_default holds %d rows after the maintenance (%v), want 0", left, err)
	}
}

// dropFloor drops the first partition (FROM MINVALUE, made empty by
// migrate), as the superuser, so that events written before the partitions'
// days land in lease.event_default, as they would were they written while the
// maintenance was not running; the next MaintainEvents moves them to
// partitions of their days and makes the first partition again.
func dropFloor(t testing.TB, db pgtest.DB) {
	t.Helper()
	pgtest.DropEventPartition(t, db, `lo IS NULL`)
}

// oldEvents writes, as the superuser, one acquired event of session "old"
// at each of the given ages before the server's clock (they land in
// lease.event_default: see dropFloor), and returns their ids.
func oldEvents(t *testing.T, db pgtest.DB, ages ...time.Duration) []int64 {
	t.Helper()
	conn := db.Conn(t)
	dropFloor(t, db)
	ids := make([]int64, len(ages))
	for i, age := range ages {
		if err := conn.QueryRow(context.Background(), `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence)
			VALUES (clock_timestamp() - $1::interval, 'acquired', 'acme', 'old', gen_random_uuid(), $2) RETURNING id`,
			age, i+1).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestMaintainEventsDropsWholeOldDays: events 40, 35 and 2 days old; with a
// 30-day retention MaintainEvents moves them to partitions of their days and
// drops the two older days whole, without touching the partitions it keeps
// (their files are the same), and makes the first partition (FROM MINVALUE)
// again below the oldest kept day; the history then starts at the kept event,
// and OwnersAt before it says so (ErrHistoryPruned).
func TestMaintainEventsDropsWholeOldDays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	s := db.Store(t)
	day := 24 * time.Hour
	ids := oldEvents(t, db, 40*day, 35*day, 2*day)
	if _, err := s.MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Fatal(err)
	}
	kept := partitionOf(t, conn, ids[2])
	gone := map[string]bool{partitionOf(t, conn, ids[0]): true, partitionOf(t, conn, ids[1]): true}
	var fileBefore uint32
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, kept).Scan(&fileBefore); err != nil {
		t.Fatal(err)
	}
	changes, err := s.MaintainEvents(ctx, data.MaintainOptions{Keep: 30 * day})
	if err != nil {
		t.Fatalf("MaintainEvents(keep 30 days): %v", err)
	}
	for _, c := range changes {
		if c.Action == "dropped" {
			delete(gone, c.Partition)
			if c.Bytes <= 0 || c.Until.After(time.Now().Add(-30*day)) {
				t.Errorf("dropped %+v: want freed bytes and an end more than 30 days ago", c)
			}
		}
	}
	if len(gone) != 0 {
		t.Fatalf("MaintainEvents(keep 30 days) = %+v, did not drop %v", changes, gone)
	}
	var floorEnd, keptStart time.Time
	if err := conn.QueryRow(ctx, `SELECT (SELECT hi FROM lease.event_partitions() WHERE lo IS NULL AND NOT is_default),
		(SELECT lo FROM lease.event_partitions() WHERE part = $1::regclass)`, kept).Scan(&floorEnd, &keptStart); err != nil || !floorEnd.Equal(keptStart) {
		t.Errorf("after the drop the first partition ends at %v (%v), want the kept day's start %v", floorEnd, err, keptStart)
	}
	var fileAfter uint32
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, kept).Scan(&fileAfter); err != nil || fileAfter != fileBefore {
		t.Errorf("the kept partition's file %d became %d (%v): the drop rewrote it", fileBefore, fileAfter, err)
	}
	evs := events(t, s)
	if len(evs) != 1 || evs[0].ID != ids[2] {
		t.Fatalf("history after the drop = %v, want only event %d", evs, ids[2])
	}
	_, err = s.OwnersAt(ctx, evs[0].At.Add(-time.Hour), data.HistoryFilter{})
	var pruned *data.PrunedError
	if !errors.As(err, &pruned) || !pruned.HistoryStart.Equal(evs[0].At) {
		t.Errorf("OwnersAt before the kept event = %v, want ErrHistoryPruned with the history from %v", err, evs[0].At)
	}
	again, err := s.MaintainEvents(ctx, data.MaintainOptions{Keep: 30 * day})
	if err != nil || len(again) != 0 {
		t.Errorf("a second MaintainEvents = %+v, %v; want nothing to do", again, err)
	}
}

// TestPruneEventsAcrossPartitions: prune_events keeps its contract on the
// partitioned history: it deletes exactly the events older than keep, in
// whichever partition they are, and returns how many.
func TestPruneEventsAcrossPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	s := db.Store(t)
	day := 24 * time.Hour
	ids := oldEvents(t, db, 40*day, 35*day, 2*day+time.Hour, 2*day-time.Hour, time.Minute)
	if _, err := s.MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT lease.prune_events('2 days')`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("prune_events('2 days') = %d, %v; want 3", n, err)
	}
	evs := events(t, s)
	if len(evs) != 2 || evs[0].ID != ids[3] || evs[1].ID != ids[4] {
		t.Errorf("history after prune_events = %v, want events %v", evs, ids[3:])
	}
}

// TestMaintainEventsNeedsLeaseAdmin: lease_admin may run the maintenance;
// lease_app and lease_reader may not (it drops history), and are told so.
func TestMaintainEventsNeedsLeaseAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	for _, tt := range []struct {
		group string
		ok    bool
	}{{"lease_admin", true}, {"lease_app", false}, {"lease_reader", false}} {
		dsn, _ := pgtest.Login(t, db, tt.group)
		s := pgtest.OpenStore(t, dsn, data.Options{})
		_, err := s.MaintainEvents(ctx, data.MaintainOptions{Keep: 30 * 24 * time.Hour})
		var perm *data.PermissionError
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s: MaintainEvents = %v, want it allowed", tt.group, err)
		case !tt.ok && !errors.As(err, &perm):
			t.Errorf("%s: MaintainEvents = %v, want a *PermissionError", tt.group, err)
		}
	}
}
