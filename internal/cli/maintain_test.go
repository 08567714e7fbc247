package cli_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestMaintainCommand: leasetop maintain as a member of
// lease_admin makes the partitions ahead, moves an event that landed in the
// DEFAULT partition to its day's and, with --keep 30d, drops that day once
// it is older, each said in one line; as lease_app it is refused with one
// line and a non-zero exit, and the history is untouched.
func TestMaintainCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	admin, _ := pgtest.Login(t, db, "lease_admin")
	app, _ := pgtest.Login(t, db, "lease_app")

	before := dayPartitions(t, conn)
	out, errOut, code := leasetop(ctx, admin, "maintain", "--ahead", "10")
	after := dayPartitions(t, conn)
	var created []string
	for _, p := range after {
		if !slices.Contains(before, p) {
			created = append(created, p)
		}
	}
	// Migrate made today and 7 days ahead, maintain 10: three days more, or
	// four when midnight (UTC, the server's) came between the two.
	var newest string
	if err := conn.QueryRow(ctx, `SELECT 'event_' || to_char(clock_timestamp() AT TIME ZONE 'UTC' + interval '9 days', 'YYYYMMDD')`).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	if code != cli.ExitOK || errOut != "" || len(created) < 3 || strings.Count(out, "created lease.event_") != len(created) ||
		after[len(after)-1] < newest {
		t.Fatalf("maintain --ahead 10: code %d stderr %q stdout:\n%s\nwant a line for each day it created (%v), up to 10 days ahead (at least %s)",
			code, errOut, out, created, newest)
	}
	pgtest.DropEventPartition(t, db, `lo IS NULL`)
	if _, err := conn.Exec(ctx, `
		INSERT INTO lease.event (at, kind, account_id, session_id) VALUES (clock_timestamp() - interval '40 days', 'acquired', 'acme', 'old')`); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = leasetop(ctx, app, "maintain", "--keep", "30d")
	if code == cli.ExitOK || strings.Count(errOut, "\n") != 1 || out != "" {
		t.Errorf("maintain as lease_app: code %d stdout %q stderr %q, want a refusal in one line", code, out, errOut)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event_default`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the default partition holds %d events after the refusal (%v), want 1", n, err)
	}
	out, errOut, code = leasetop(ctx, admin, "maintain", "--keep", "30d")
	if code != cli.ExitOK || errOut != "" || !strings.Contains(out, "moved 1 events from the default partition to lease.event_") ||
		!strings.Contains(out, "dropped lease.event_") {
		t.Fatalf("maintain --keep 30d: code %d stderr %q stdout:\n%s\nwant the event moved and its day dropped", code, errOut, out)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE session_id = 'old'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d events of 40 days ago left (%v), want 0", n, err)
	}
	out, errOut, code = leasetop(ctx, admin, "maintain", "--keep", "30d")
	if code != cli.ExitOK || errOut != "" || out != "partitions are current: nothing to do\n" {
		t.Errorf("maintain again: code %d stderr %q stdout %q, want nothing to do", code, errOut, out)
	}
}

// dayPartitions returns the names of lease.event's daily partitions,
// oldest first.
func dayPartitions(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT part::text FROM lease.event_partitions()
		WHERE NOT is_default AND lo IS NOT NULL ORDER BY lo`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, "lease.")
	}
	return names
}

// TestMaintainBadInput: a bad --keep or --ahead, or an argument, is one
// line on stderr and exit 2, before any connection (the DSN is unreachable).
func TestMaintainBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"--keep", "abc"}, {"--keep", "-3d"}, {"--keep", "0h"}, {"--keep", "3\x1b[31md"},
		{"--ahead", "0"}, {"--ahead", "400"}, {"now"},
	} {
		out, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", append([]string{"maintain"}, args...)...)
		if code != cli.ExitUsage || strings.Count(errOut, "\n") != 1 || out != "" || strings.Contains(errOut, "\x1b") {
			t.Errorf("maintain %q: code %d stdout %q stderr %q, want 2 and one clean line", args, code, out, errOut)
		}
	}
}
