package demo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestOpenDBSharesTheUsersDatabase: two demos on one database get accounts
// of their own, and each removes on Close only what it made: its leases, and
// the output schema only when it created it and nobody else's rows are left.
func TestOpenDBSharesTheUsersDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	check := db.Store(t)
	open := func() (*demo.DB, demo.Config) {
		t.Helper()
		cfg := demo.Config{Accounts: 1}
		d, err := demo.OpenDB(ctx, db.URL, &cfg)
		if err != nil {
			t.Fatalf("OpenDB(%q) err = %v, want nil", db.URL, err)
		}
		t.Cleanup(d.Close)
		if cfg.DSN != db.URL || !strings.HasPrefix(cfg.Prefix, "demo-") {
			t.Fatalf("OpenDB set DSN %q, Prefix %q; want %q and a demo- prefix", cfg.DSN, cfg.Prefix, db.URL)
		}
		if !strings.Contains(d.Where(), cfg.Prefix) {
			t.Errorf("Where() = %q, want it to name the prefix %q", d.Where(), cfg.Prefix)
		}
		return d, cfg
	}
	first, cfgA := open()
	second, cfgB := open()
	if cfgA.Prefix == cfgB.Prefix {
		t.Fatalf("both demos got the prefix %q", cfgA.Prefix)
	}
	keyA := data.Key{Account: cfgA.Account(0), Session: demo.Session(0)}
	keyB := data.Key{Account: cfgB.Account(0), Session: demo.Session(0)}
	for _, k := range []data.Key{keyA, keyB} {
		if _, err := check.Acquire(ctx, k, uuid.New(), time.Minute, "test"); err != nil {
			t.Fatalf("Acquire(%v) err = %v", k, err)
		}
	}
	held := func(k data.Key) bool {
		t.Helper()
		snap, err := check.Snapshot(ctx)
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		for _, l := range snap.Leases {
			if l.Key == k {
				return true
			}
		}
		return false
	}
	schema := func() bool {
		t.Helper()
		var ok bool
		if err := check.Pool().QueryRow(ctx, `SELECT to_regnamespace('leasetop_demo') IS NOT NULL`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	second.Close() // did not create the schema: leaves it, and the first demo's lease
	if held(keyB) || !held(keyA) || !schema() {
		t.Fatalf("after the second demo's Close: its lease held %v, the first's %v, schema %v; want false, true, true", held(keyB), held(keyA), schema())
	}
	first.Close() // created it, and nothing else is in it
	if held(keyA) || schema() {
		t.Fatalf("after the first demo's Close: its lease held %v, schema %v; want false, false", held(keyA), schema())
	}
}

// TestOpenDBTellsTheEmbeddedStart: without a DSN, OpenDB tells
// Config.Starting each step of the embedded server's first start, in order
// (leasetop demo shows them on its status line while they take seconds).
func TestOpenDBTellsTheEmbeddedStart(t *testing.T) {
	t.Parallel()
	var steps []string
	cfg := demo.Config{Accounts: 1, Starting: func(s string) { steps = append(steps, s) }}
	d, err := demo.OpenDB(context.Background(), "", &cfg)
	if err != nil {
		t.Fatalf("OpenDB without a DSN: %v", err)
	}
	d.Close()
	if got, want := strings.Join(steps, ", "), "initdb, starting PostgreSQL, creating and migrating the demo database"; got != want {
		t.Errorf("steps told: %s; want %s", got, want)
	}
}
