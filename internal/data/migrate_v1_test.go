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

// createV1 builds the lease schema as leasetop's version 1 left it, from the
// version-1 SQL files in testdata/v1 (git show a77cb11~1:sql/<file>).
func createV1(t *testing.T, conn *pgx.Conn) {
	createOld(t, conn, 1, "schema.sql", "functions.sql", "triggers.sql", "roles.sql")
}

// TestMigrateFromVersion1 migrates a real version-1 schema, with a live lease
// and history, to this version. Version 1 stored each run's own id; the
// migration must store its public id instead, so the live holder, which
// knows only its own id, keeps renewing and releasing, and the history names
// the same public ids. Migrating again changes nothing.
func TestMigrateFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	conn := db.Conn(t)
	createV1(t, conn)

	live, zombie, taker := uuid.New(), uuid.New(), uuid.New()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`SELECT * FROM lease.acquire('acme', 'live', $1, '1 hour', 'live holder')`, []any{live}},
		{`SELECT * FROM lease.acquire('acme', 'taken', $1, '1 millisecond', 'zombie')`, []any{zombie}},
		{`SELECT pg_sleep(0.01)`, nil}, // the server's clock passes the 1 ms lease; no readiness is awaited
		{`SELECT * FROM lease.acquire('acme', 'taken', $1, '1 hour', 'taker')`, []any{taker}},
		{`SELECT lease.renew('acme', 'taken', $1, '1 minute')`, []any{zombie}},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("version 1: %s: %v", q.sql, err)
		}
	}
	var before int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	for i := range 2 { // the second run must not hash the ids again
		if err := data.Migrate(ctx, conn); err != nil {
			t.Fatalf("Migrate #%d from version 1: %v", i+1, err)
		}
		if v, err := data.SchemaVersion(ctx, conn); err != nil || v != leasesql.Version {
			t.Fatalf("SchemaVersion after Migrate #%d = %d, %v; want %d", i+1, v, err, leasesql.Version)
		}
		if run, _, ok := leaseOf(t, conn, data.Key{Account: "acme", Session: "live"}); !ok || run != data.PublicRunID(live) {
			t.Fatalf("after Migrate #%d the live lease shows run %v (held %v), want the public id %v", i+1, run, ok, data.PublicRunID(live))
		}
	}

	s := db.Store(t)
	evs := events(t, s)
	if len(evs) != before {
		t.Fatalf("the migration wrote %d events, want none (it must not look like a takeover)", len(evs)-before)
	}
	want := []struct {
		kind      data.Kind
		run, prev uuid.UUID
		reason    string
	}{
		{data.KindAcquired, live, uuid.Nil, ""},
		{data.KindAcquired, zombie, uuid.Nil, ""},
		{data.KindTakenOver, taker, zombie, ""},
		{data.KindRenewRejected, zombie, uuid.Nil, "held by run " + data.PublicRunID(taker).String()},
	}
	if len(evs) != len(want) {
		t.Fatalf("history = %v, want %d events", kinds(evs), len(want))
	}
	pub := func(id uuid.UUID) uuid.UUID {
		if id == uuid.Nil {
			return id
		}
		return data.PublicRunID(id)
	}
	for i, w := range want {
		e := evs[i]
		if e.Kind != w.kind || e.RunID != pub(w.run) || e.PrevRunID != pub(w.prev) || e.Reason != w.reason {
			t.Errorf("event %d = %s run %v prev %v reason %q, want %s run %v prev %v reason %q",
				i, e.Kind, e.RunID, e.PrevRunID, e.Reason, w.kind, pub(w.run), pub(w.prev), w.reason)
		}
	}

	// The live holder keeps its lease with the id it has always had.
	k := data.Key{Account: "acme", Session: "live"}
	if _, err := s.Renew(ctx, k, live, time.Hour); err != nil {
		t.Fatalf("the live holder's Renew after the migration: %v, want nil", err)
	}
	var fenced bool
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT lease.check_fence('acme', 'live', $1, fence) FROM lease.session_lease
			WHERE account_id = 'acme' AND session_id = 'live'`, live).Scan(&fenced)
	})
	if err != nil || !fenced {
		t.Fatalf("the live holder's check_fence after the migration = %v, %v; want true", fenced, err)
	}
	if ok, err := s.Release(ctx, k, live); err != nil || !ok {
		t.Fatalf("the live holder's Release after the migration = %v, %v; want true", ok, err)
	}
}
