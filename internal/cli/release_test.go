package cli_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestRelease(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "s", "1 min", "dev")
	dsn := db.ReaderURL(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	out, errOut, code := leasetop(ctx, dsn, "release", "--account", "acme", "--session", "s", "--reason", "r")
	if code != cli.ExitFailure || !strings.Contains(errOut, "permission denied") || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, password) {
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

// A compare-and-release never turns into an unconditional one, whatever
// --run carries: the all-zero run id is compared as the value it is (no run
// holds it: nothing to release, exit 5), and an empty --run is not "no
// --run" but a malformed run id (exit 2). The holder keeps its lease.
func TestReleaseRunIsAlwaysCompared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	holder := acquire(t, conn, "acme", "chat-8", "1 min", "dev-1")
	tests := []struct {
		name     string
		run      string
		wantCode int
		wantErr  string
	}{
		{"nil run id", uuid.Nil.String(), cli.ExitNothing,
			"nothing to release: acme/chat-8 is held by run " + holder.String() + ` (holder "dev-1"), not run 00000000-0000-0000-0000-000000000000`},
		{"nil run id without dashes", "00000000000000000000000000000000", cli.ExitNothing, "not run 00000000-0000-0000-0000-000000000000"},
		{"empty run", "", cli.ExitUsage, `--run "" is not a run id`},
		{"blank run", " ", cli.ExitUsage, `--run " " is not a run id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, "release", "--account", "acme", "--session", "chat-8", "--run", tt.run, "--reason", "nil")
			if code != tt.wantCode || out != "" || !strings.Contains(errOut, tt.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("release --run %q: code %d out %q err %q, want %d, nothing on stdout, one line with %q", tt.run, code, out, errOut, tt.wantCode, tt.wantErr)
			}
			var run uuid.UUID
			if err := conn.QueryRow(ctx, `SELECT run_id FROM lease.session_lease WHERE account_id = 'acme' AND session_id = 'chat-8'`).Scan(&run); err != nil || run != holder {
				t.Fatalf("after release --run %q the lease is held by %v (%v), want still %v", tt.run, run, err, holder)
			}
		})
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.event WHERE kind = 'force_released'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("force_released events = %d (%v), want 0", n, err)
	}
}

// --run takes the first 8 or more hex digits of a run id, as the monitor
// shows it: resolved to the holder's full id, then compared-and-released
// with that id. A prefix the holder's id does not start with, one that
// another run of the key's history also starts with, or one shorter than 8
// hex digits is one line and releases nothing.
func TestReleaseByRunPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	held := acquire(t, conn, "acme", "p", "1 min", "dev-1")
	upper := acquire(t, conn, "acme", "upper", "1 min", "dev-2")
	twin := acquire(t, conn, "acme", "twin", "1 min", "dev-3")
	// A run of twin's history whose id shares the holder's first 8 digits
	// (as 1 in 2^32 pairs of runs do).
	other := uuid.MustParse(twin.String()[:9] + "0000-8000-8000-000000000000")
	if strings.HasPrefix(twin.String(), other.String()[:13]) {
		t.Skip("the holder's id happens to continue like the made-up twin")
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, fence)
		VALUES (clock_timestamp() - interval '1 hour', 'released', 'acme', 'twin', $1, 1)`, other); err != nil {
		t.Fatal(err)
	}
	stale := uuid.New()
	for strings.HasPrefix(held.String(), stale.String()[:8]) {
		stale = uuid.New()
	}
	release := func(session, run string) []string {
		return []string{"release", "--account", "acme", "--session", session, "--run", run, "--reason", "stuck"}
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string // on stdout when wantCode is 0, else on stderr
	}{
		{"too short", release("p", held.String()[:7]), cli.ExitUsage, `--run "` + held.String()[:7] + `" is too short: give at least 8 hex digits`},
		{"dash out of place", release("p", strings.Replace(held.String()[:10], "-", "", 1)), cli.ExitUsage, "is not a run id"},
		{"not hex", release("p", "1c1d02bz"), cli.ExitUsage, "is not a run id"},
		{"stale prefix", release("p", stale.String()[:8]), cli.ExitNothing,
			"nothing to release: acme/p is held by run " + held.String() + ` (holder "dev-1"), not run ` + stale.String()[:8] + "…"},
		{"not held", release("nobody", held.String()[:8]), cli.ExitNothing, "nothing to release: acme/nobody is not held"},
		{"ambiguous", release("twin", twin.String()[:8]), cli.ExitUsage,
			"--run " + twin.String()[:8] + "… is ambiguous: runs " + twin.String() + " (holding acme/twin) and " + other.String() + " (in its history) both start with it; give more digits"},
		{"eight digits", release("p", held.String()[:8]), cli.ExitOK, "released acme/p (run " + held.String() + ")"},
		{"upper case, with a dash", release("upper", strings.ToUpper(upper.String()[:11])), cli.ExitOK, "released acme/upper (run " + upper.String() + ")"},
		{"longer than the twin", release("twin", twin.String()[:13]), cli.ExitOK, "released acme/twin (run " + twin.String() + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := leasetop(ctx, db.URL, tt.args...)
			got := errOut
			if tt.wantCode == cli.ExitOK {
				got = out
			}
			if code != tt.wantCode || !strings.Contains(got, tt.want) || strings.Count(out+errOut, "\n") != 1 {
				t.Errorf("%v: code %d out %q err %q, want %d and one line with %q", tt.args, code, out, errOut, tt.wantCode, tt.want)
			}
			var after int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM lease.session_lease`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if released := before - after; (tt.wantCode == cli.ExitOK) != (released == 1) || released > 1 {
				t.Errorf("%v released %d leases, want %d", tt.args, released, map[bool]int{true: 1}[tt.wantCode == cli.ExitOK])
			}
		})
	}
	rows, err := conn.Query(ctx, `SELECT run_id FROM lease.event WHERE kind = 'force_released' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if want := []uuid.UUID{held, upper, twin}; err != nil || !slices.Equal(got, want) {
		t.Errorf("force_released runs = %v (%v), want %v", got, err, want)
	}
}
