// Package companions_test drives the monitor's scriptable companions (ls,
// events, release) and watch's refusals through cli.Run, against a real
// PostgreSQL, each test on its own database.
package companions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/syncbuf"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// leasetop runs a command in-process with DATABASE_URL=dsn.
func leasetop(ctx context.Context, dsn string, args ...string) (stdout, stderr string, code int) {
	var out, errOut syncbuf.Buffer
	err := run(ctx, dsn, &out, &errOut, args...)
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

func run(ctx context.Context, dsn string, out, errOut *syncbuf.Buffer, args ...string) error {
	env := map[string]string{"DATABASE_URL": dsn, "HOME": os.TempDir()}
	return cli.Run(ctx, cli.Env{Args: args, Getenv: func(k string) string { return env[k] },
		Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut})
}

// acquire acquires acct/sess for a fresh run and returns its public run id,
// the one ls, events and release show and take.
func acquire(t *testing.T, conn *pgx.Conn, acct, sess, ttl, holder string) uuid.UUID {
	t.Helper()
	r := uuid.New()
	if _, err := conn.Exec(context.Background(), `SELECT lease.acquire($1, $2, $3, $4::interval, $5)`, acct, sess, r, ttl, holder); err != nil {
		t.Fatal(err)
	}
	return data.PublicRunID(r)
}

// waitExpired polls the server clock until the lease on acct/sess expired.
func waitExpired(t *testing.T, conn *pgx.Conn, acct, sess string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var expired bool
		err := conn.QueryRow(context.Background(), `SELECT expires_at <= clock_timestamp() FROM lease.session_lease
			WHERE account_id = $1 AND session_id = $2`, acct, sess).Scan(&expired)
		if err != nil {
			t.Fatal(err)
		}
		if expired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease never expired")
		}
		time.Sleep(10 * time.Millisecond) // polling the server clock, bounded by the deadline
	}
}

// insertHostileRow writes a row the schema would refuse: a foreign or older
// table, or a superuser's mistake. Readers must not trust the database.
func insertHostileRow(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []string{"session_lease_account_id_check", "session_lease_session_id_check", "session_lease_holder_check"} {
		if _, err := conn.Exec(ctx, `ALTER TABLE lease.session_lease DROP CONSTRAINT `+c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES
		($1, $2, gen_random_uuid(), $3, 999, clock_timestamp(), clock_timestamp(), clock_timestamp() + interval '1 min')`,
		"evil\x1b[2J", "s\x1b]0;pwned\x07", "h\u009b31m\u202eabc"); err != nil {
		t.Fatal(err)
	}
}

func TestLs(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	out, errOut, code := leasetop(ctx, db.URL, "ls")
	if code != 0 || out != "no leases held\n" {
		t.Fatalf("ls on empty: code %d out %q err %q", code, out, errOut)
	}
	r1 := acquire(t, conn, "acme", "chat-1", "1 min", "device one")
	acquire(t, conn, "acme", "chat-0", "200 ms", "dev-0")
	waitExpired(t, conn, "acme", "chat-0")
	insertHostileRow(t, conn)

	out, errOut, code = leasetop(ctx, db.URL, "ls")
	if code != 0 {
		t.Fatalf("ls: code %d err %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ACCOUNT") {
		t.Fatalf("ls printed %d lines, want a header and 3 leases:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[1], "chat-0") || !strings.Contains(lines[1], "expired") {
		t.Errorf("line for chat-0 = %q, want it sorted first and expired", lines[1])
	}
	if !strings.Contains(lines[2], r1.String()) || !strings.Contains(lines[2], "device one") || !strings.Contains(lines[2], "s ") {
		t.Errorf("line for chat-1 = %q, want its full run id, holder and time left", lines[2])
	}
	if strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `evil\x1b[2J`) {
		t.Errorf("ls text output is not inert:\n%q", out)
	}
}

func TestLsJSON(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	r := acquire(t, conn, "acme", "chat-1", "1 min", "dev")
	out, errOut, code := leasetop(ctx, db.URL, "ls", "--json")
	if code != 0 {
		t.Fatalf("ls --json: code %d err %q", code, errOut)
	}
	var got struct {
		ServerTime time.Time `json:"server_time"`
		Leases     []struct {
			AccountID        string    `json:"account_id"`
			SessionID        string    `json:"session_id"`
			RunID            uuid.UUID `json:"run_id"`
			Holder           string    `json:"holder"`
			Fence            int64     `json:"fence"`
			ExpiresAt        time.Time `json:"expires_at"`
			RemainingSeconds float64   `json:"remaining_seconds"`
			Expired          bool      `json:"expired"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ls --json is not JSON: %v\n%s", err, out)
	}
	if len(got.Leases) != 1 {
		t.Fatalf("leases = %d, want 1", len(got.Leases))
	}
	l := got.Leases[0]
	if l.AccountID != "acme" || l.SessionID != "chat-1" || l.RunID != r || l.Holder != "dev" || l.Expired {
		t.Errorf("lease = %+v", l)
	}
	if want := l.ExpiresAt.Sub(got.ServerTime).Seconds(); l.RemainingSeconds < 50 || l.RemainingSeconds > 60 || l.RemainingSeconds != want {
		t.Errorf("remaining_seconds = %v, want expires_at - server_time = %v (about 60)", l.RemainingSeconds, want)
	}
}

func TestEventsHistory(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	for i := range 5 {
		acquire(t, conn, "acme", fmt.Sprintf("s%d", i), "1 min", "dev")
	}
	if _, err := conn.Exec(ctx, `SELECT lease.force_release('acme', 's0', NULL, 'operator said so')`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		wantIDs []int64
	}{
		{[]string{"events"}, []int64{1, 2, 3, 4, 5, 6}},
		{[]string{"events", "--limit", "2"}, []int64{5, 6}},
		{[]string{"events", "--since", "3"}, []int64{4, 5, 6}},
		{[]string{"events", "--since", "3", "--limit", "1"}, []int64{4}},
		{[]string{"events", "--since", "6"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, tt.args...)
			if code != 0 {
				t.Fatalf("code %d err %q", code, errOut)
			}
			var got []int64
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var id int64
				if line != "" {
					fmt.Sscan(line, &id)
					got = append(got, id)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantIDs) {
				t.Errorf("ids = %v, want %v\n%s", got, tt.wantIDs, out)
			}
		})
	}
	out, _, _ := leasetop(ctx, db.URL, "events", "--since", "5")
	if want := `force_released acme/s0 run=`; !strings.Contains(out, want) || !strings.Contains(out, `reason="operator said so"`) || !strings.Contains(out, "actor=postgres") {
		t.Errorf("force_released line = %q, want %q with actor and quoted reason", out, want)
	}
	out, _, _ = leasetop(ctx, db.URL, "events", "--json", "--since", "5")
	var ev struct {
		ID        int64      `json:"id"`
		Kind      string     `json:"kind"`
		Reason    *string    `json:"reason"`
		PrevRunID *uuid.UUID `json:"prev_run_id"`
		Actor     string     `json:"actor"`
	}
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.ID != 6 || ev.Kind != "force_released" || ev.Reason == nil ||
		*ev.Reason != "operator said so" || ev.PrevRunID != nil || ev.Actor == "" {
		t.Errorf("events --json = %s (%v), want event 6 with its reason and a null prev_run_id", out, err)
	}
}

func TestEventsFollow(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "before", "1 min", "dev")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, db.URL, &out, &errOut, "events", "--follow") }()
	waitOutput := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; stdout %q stderr %q", what, out.String(), errOut.String())
			}
			time.Sleep(10 * time.Millisecond) // polling the command's output, bounded by the deadline
		}
	}
	waitOutput("the history", func(s string) bool { return strings.Contains(s, "acme/before") })
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), "following events live") {
		if time.Now().After(deadline) {
			t.Fatalf("never live: %q", errOut.String())
		}
		time.Sleep(10 * time.Millisecond) // polling stderr, bounded by the deadline
	}
	acquire(t, conn, "acme", "after", "1 min", "dev")
	waitOutput("the live event", func(s string) bool { return strings.Contains(s, "acme/after") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow returned %v after cancel, want nil", err)
	}
	if n := strings.Count(out.String(), "acme/before"); n != 1 {
		t.Errorf("the history event was printed %d times, want once:\n%s", n, out.String())
	}
}

// withUser returns dsn with another login.
func withUser(t *testing.T, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

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
	role := "reader_" + db.Name
	if _, err := conn.Exec(ctx, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN PASSWORD 'pw' IN ROLE lease_reader`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, pgtest.AdminURL()); err == nil {
			_, _ = c.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
			c.Close(ctx)
		}
	})
	dsn := withUser(t, db.URL, role, "pw")
	out, errOut, code := leasetop(ctx, dsn, "release", "--account", "acme", "--session", "s", "--reason", "r")
	if code != cli.ExitFailure || !strings.Contains(errOut, "permission denied") || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "pw@") {
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

func TestWatchRefusals(t *testing.T) {
	ctx := context.Background()
	bad := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(bad, []byte("[keys]\nrelease = \"x\"\nexplode = \"e\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		wantCode int
		want     string
	}{
		{nil, cli.ExitUsage, "the monitor needs a terminal"},
		{[]string{"watch", "--read-only"}, cli.ExitUsage, "the monitor needs a terminal"},
		{[]string{"watch", "--config", bad}, cli.ExitUsage, bad + `:3: unknown action "explode"`},
		{[]string{"watch", "--config", filepath.Join(t.TempDir(), "missing.toml")}, cli.ExitUsage, "read key config"},
		{[]string{"watch", "extra"}, cli.ExitUsage, "takes no arguments"},
	}
	for _, tt := range tests {
		_, errOut, code := leasetop(ctx, "postgres://127.0.0.1:1/none", tt.args...)
		if code != tt.wantCode || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("leasetop %v: code %d err %q, want %d and one line with %q", tt.args, code, errOut, tt.wantCode, tt.want)
		}
	}
}
