package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/pgtest"
)

func TestRelease(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	held := acquire(t, conn, "acme", "held", "1 min", "dev-1")
	taken := acquire(t, conn, "acme", "taken", "1 min", "dev-2")
	other := uuid.New()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
		gone     string // session whose lease must be gone afterwards
	}{
		{"missing reason", []string{"--account", "acme", "--session", "held"}, cli.ExitUsage, "", "needs --reason", ""},
		{"missing session", []string{"--account", "acme", "--reason", "r"}, cli.ExitUsage, "", "needs --account and --session", ""},
		{"bad run id", []string{"--account", "acme", "--session", "held", "--run", "nope\x1b[2J", "--reason", "r"}, cli.ExitUsage, "", `--run "nope\\x1b[2J" is not a run id`, ""},
		{"control character", []string{"--account", "acme\x07", "--session", "held", "--reason", "r"}, cli.ExitUsage, "", "control characters", ""},
		{"stale run", []string{"--account", "acme", "--session", "taken", "--run", other.String(), "--reason", "r"}, cli.ExitNothing, "",
			"nothing to release: acme/taken is held by run " + taken.String(), ""},
		{"not held", []string{"--account", "acme", "--session", "nobody", "--reason", "r"}, cli.ExitNothing, "", "nothing to release: acme/nobody is not held", ""},
		{"by run", []string{"--account", "acme", "--session", "held", "--run", held.String(), "--reason", "stuck device"}, cli.ExitOK,
			"released acme/held (run " + held.String() + ")", "", "held"},
		{"whoever holds it", []string{"--account", "acme", "--session", "taken", "--reason", "cleanup"}, cli.ExitOK, "released acme/taken", "", "taken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, append([]string{"release"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("code %d out %q err %q, want %d, %q, %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if tt.wantErr != "" && strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07") {
				t.Errorf("output carries control characters: %q %q", out, errOut)
			}
		})
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&n); err != nil || n != 0 {
		t.Errorf("leases left = %d (%v), want 0", n, err)
	}
	var actor, reason string
	if err := conn.QueryRow(ctx, `SELECT actor, reason FROM lease.event WHERE kind = 'force_released' AND session_id = 'held'`).Scan(&actor, &reason); err != nil ||
		actor != "postgres" || reason != "stuck device" {
		t.Errorf("force_released event actor %q reason %q (%v), want postgres and the reason", actor, reason, err)
	}
}

func TestReleaseAsReaderIsRefused(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "s", "1 min", "dev")
	dsn := db.ReaderURL(t)
	out, errOut, code := leasetop(ctx, dsn, "release", "--account", "acme", "--session", "s", "--reason", "r")
	if code != cli.ExitFailure || !strings.Contains(errOut, "permission denied") || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, pgtest.ReaderPassword+"@") {
		t.Errorf("release as lease_reader: code %d out %q err %q, want 1 and one line saying permission denied", code, out, errOut)
	}
	// The reader can still list and read history.
	if _, errOut, code := leasetop(ctx, dsn, "ls"); code != 0 {
		t.Errorf("ls as lease_reader: code %d err %q", code, errOut)
	}
	if _, errOut, code := leasetop(ctx, dsn, "events"); code != 0 {
		t.Errorf("events as lease_reader: code %d err %q", code, errOut)
	}
}
