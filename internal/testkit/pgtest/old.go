package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// NewAtVersion creates a fresh database whose lease schema is the real
// schema of an older leasetop, version 4, 5 or 6, made from
// internal/data/testdata/vN (that version's sql/ files) as its migrate made it: the
// prelude and members.sql as the superuser, the rest as lease_owner, in
// that version's order, and the version recorded. The database is dropped
// when t ends.
func NewAtVersion(t testing.TB, version int) DB {
	t.Helper()
	owned := OldOwnedFiles(version)
	if owned == nil {
		t.Fatalf("pgtest.NewAtVersion: no recipe for version %d (testdata holds 4, 5 and 6)", version)
	}
	db := NewEmpty(t)
	conn := db.Conn(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("version %d: %s: %v", version, firstLine(sql), err)
		}
	}
	exec(oldFile(t, version, "prelude.sql"))
	exec(`SET ROLE lease_owner`)
	for _, f := range owned {
		exec(oldFile(t, version, f))
	}
	exec(`RESET ROLE`)
	exec(oldFile(t, version, "members.sql"))
	exec(fmt.Sprintf(`INSERT INTO lease.schema_version (version) VALUES (%d)`, version))
	return db
}

// oldFile reads internal/data/testdata/vN/name from the module's source tree.
func oldFile(t testing.TB, version int, name string) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("pgtest: cannot find its own source file")
	}
	path := filepath.Join(filepath.Dir(here), "..", "..", "..", "internal", "data", "testdata", fmt.Sprintf("v%d", version), name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return string(b)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// OldOwnedFiles returns the files of data/testdata/vN that version's
// migrate applied as the schema's owner, in its order (between prelude.sql
// and members.sql), or nil when testdata holds no such version: 4 and 5
// had one file of functions, 6 one file per contract.
func OldOwnedFiles(version int) []string {
	switch version {
	case 4, 5:
		return []string{"schema.sql", "functions.sql", "preempt.sql", "queue.sql", "handover.sql", "partition.sql", "triggers.sql", "roles.sql"}
	case 6:
		return []string{"schema.sql", "runid.sql", "checks.sql", "failover.sql", "fence.sql", "history.sql", "acquire.sql",
			"renew.sql", "release.sql", "preempt.sql", "queue.sql", "handover.sql", "partition.sql", "notify.sql",
			"triggers.sql", "roles.sql"}
	}
	return nil
}
