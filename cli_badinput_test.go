package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// The bad-input cases of the commands that talk to the database (besides
// migrate's, in main_test.go, and watch's, which need a terminal and are in
// internal/faults). Each must print one line saying what is wrong and what to
// do, exit with its documented code, never show a password or a control
// character, and change nothing.

// badInput is one case: a command line and what it must produce.
type badInput struct {
	name     string
	args     []string
	wantCode int
	want     string // in the one line on stderr
}

// checkBadInput runs tt and checks the one-line contract (the output shows
// neither hunter2 nor any of secrets, the passwords the command is given);
// it logs the line as "BADINPUT name: exit N: line" for docs/RELIABILITY.md.
func checkBadInput(t *testing.T, env map[string]string, tt badInput, secrets ...string) (stdout string) {
	t.Helper()
	out, stderr, code := leasetop(t, env, tt.args...)
	if code != tt.wantCode {
		t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
	}
	errOut, warned := splitDSNWarning(stderr)
	if tt.args[0] == "bench" && tt.wantCode != cli.ExitSchema { // its progress lines come first; a schema's line comes alone
		for strings.HasPrefix(errOut, "bench: ") {
			_, errOut, _ = strings.Cut(errOut, "\n")
		}
	}
	if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
		t.Errorf("stderr = %q, want one line containing %q", errOut, tt.want)
	}
	if want := slices.Contains(tt.args, "--dsn"); warned != want { // every --dsn here carries a password
		t.Errorf("stderr = %q: the --dsn password warning shown %v, want %v", stderr, warned, want)
	}
	for _, secret := range append([]string{"hunter2"}, secrets...) {
		if secret != "" && strings.Contains(out+stderr, secret) {
			t.Errorf("the output reveals the password: %q %q", out, errOut)
		}
	}
	if strings.ContainsAny(out+errOut, "\x1b\x07\x9b") || strings.Contains(errOut, "goroutine ") {
		t.Errorf("the output carries a control character or a stack trace: %q %q", out, errOut)
	}
	t.Logf("BADINPUT %s: exit %d: %s", tt.name, code, strings.TrimSpace(errOut))
	return out
}

// splitDSNWarning returns stderr without the line that warns about a
// password in --dsn, and whether that line was there (first, once).
func splitDSNWarning(stderr string) (string, bool) {
	first, rest, _ := strings.Cut(stderr, "\n")
	if strings.HasPrefix(first, "leasetop: warning: --dsn carries a password") {
		return rest, true
	}
	return stderr, false
}

// hostileUserDSN is a keyword/value DSN for dbURL's server whose user name
// is an OSC sequence (set the window title) ending in BEL.
func hostileUserDSN(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("host=%s port=%s dbname=%s sslmode=disable password=hunter2 user='\x1b]0;pwned\x07'",
		u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"))
}

// dbState is what a refused command must leave as it was.
type dbState struct{ leases, events int }

func readState(t *testing.T, conn *pgx.Conn) dbState {
	t.Helper()
	var s dbState
	if err := conn.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM lease.session_lease), (SELECT count(*) FROM lease.event)`).Scan(&s.leases, &s.events); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConnectionErrorsGetOneLine(t *testing.T) {
	db := pgtest.New(t)
	dsns := []struct {
		name     string
		dsn      string
		wantCode int
		want     string
	}{
		{"invalid DSN", "postgres://u:hunter2@[::1/db", cli.ExitUsage, "invalid database URL"},
		{"unreachable host", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2", cli.ExitFailure, "cannot connect to 127.0.0.1:1/db"},
		{"wrong password", withPassword(t, db.URL, "hunter2"), cli.ExitFailure, "password authentication failed"},
		// The server quotes the user name back: its escapes must not reach the terminal.
		{"escapes in the user name", hostileUserDSN(t, db.URL), cli.ExitFailure, `password authentication failed for user "\x1b]0;pwned\x07"`},
	}
	commands := [][]string{
		{"ls"},
		{"events"},
		{"release", "--account", "a", "--session", "s", "--reason", "r"},
		{"run", "--account", "a", "--session", "s", "--", "sh", "-c", "echo ran"},
	}
	for _, d := range dsns {
		for _, c := range commands {
			args := append([]string{c[0], "--dsn", d.dsn}, c[1:]...)
			tt := badInput{name: c[0] + " " + d.name, args: args, wantCode: d.wantCode, want: d.want}
			t.Run(tt.name, func(t *testing.T) {
				if out := checkBadInput(t, nil, tt); out != "" {
					t.Errorf("stdout = %q, want nothing (the command must not run)", out)
				}
			})
		}
	}
}

func TestSchemaErrorsGetOneLine(t *testing.T) {
	empty := pgtest.NewEmpty(t)
	older := pgtest.NewAtVersion(t, leasesql.Version-1) // a real schema of the version before
	newer := pgtest.New(t)
	if _, err := newer.Conn(t).Exec(context.Background(), `UPDATE lease.schema_version SET version = $1`, leasesql.Version+1); err != nil {
		t.Fatal(err)
	}
	v := leasesql.Version
	tests := []struct {
		db   pgtest.DB
		what string
		want string // the line, as docs/cli.md quotes it (a newer schema's names this binary's version first)
	}{
		{empty, "no schema", "leasetop: database has no lease schema: run leasetop migrate"},
		{older, "older schema", fmt.Sprintf("leasetop: lease schema is at version %d, this leasetop needs %d: run leasetop migrate", v-1, v)},
		{newer, "newer schema", fmt.Sprintf(" is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop (leasetop version --dsn URL compares them)", v+1, v)},
	}
	for _, tt := range tests {
		for _, args := range [][]string{ // every command but migrate (below) and watch (a terminal: internal/faults)
			{"ls"},
			{"ls", "--at", "1m ago"},
			{"events"},
			{"events", "--follow"},
			{"release", "--account", "a", "--session", "s", "--reason", "r"},
			{"queue", "--account", "a", "--session", "s"},
			{"run", "--account", "a", "--session", "s", "--", "sh", "-c", "echo ran"},
			{"exporter", "--listen", "127.0.0.1:0"},
			{"bench", "--only", "select1"},
			{"demo", "--headless"},
		} {
			t.Run(args[0]+" "+tt.what, func(t *testing.T) {
				env := map[string]string{"DATABASE_URL": tt.db.URL}
				if out := checkBadInput(t, env, badInput{name: args[0] + " " + tt.what, args: args, wantCode: cli.ExitSchema, want: tt.want + "\n"}); out != "" {
					t.Errorf("stdout = %q, want nothing", out)
				}
			})
		}
	}
	t.Run("migrate over a newer schema", func(t *testing.T) {
		env := map[string]string{"DATABASE_URL": newer.URL}
		checkBadInput(t, env, badInput{name: "migrate newer schema", args: []string{"migrate"}, wantCode: cli.ExitSchema, want: tests[2].want + "\n"})
		var v int
		if err := newer.Conn(t).QueryRow(context.Background(), `SELECT version FROM lease.schema_version`).Scan(&v); err != nil || v != leasesql.Version+1 {
			t.Errorf("schema version after the refused migrate = %d (%v), want %d untouched", v, err, leasesql.Version+1)
		}
	})
}

// Each role may do what its grants allow and nothing more; a refused action
// is one line, exit 1, and changes nothing.
func TestMissingPrivilegesGetOneLine(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	held := uuid.New()
	if _, err := conn.Exec(ctx, `SELECT lease.acquire('acme', 'held', $1, '10 min', 'dev')`, held); err != nil {
		t.Fatal(err)
	}
	reader, _ := pgtest.Login(t, db, "lease_reader")
	app, _ := pgtest.Login(t, db, "lease_app")
	nobody, _ := pgtest.Login(t, db, "")
	tests := []struct {
		name string
		dsn  string
		args []string
		want string
	}{
		{"run as lease_reader", reader, []string{"run", "--account", "acme", "--session", "free", "--", "sh", "-c", "echo ran"}, "permission denied for function acquire"},
		{"release as lease_reader", reader, []string{"release", "--account", "acme", "--session", "held", "--reason", "r"}, "permission denied for function force_release"},
		{"release as lease_app", app, []string{"release", "--account", "acme", "--session", "held", "--reason", "r"}, "permission denied for function force_release"},
		{"queue --clear as lease_app", app, []string{"queue", "--account", "acme", "--session", "held", "--clear", "--reason", "r"}, "permission denied for function clear_queue"},
		{"migrate as lease_app", app, []string{"migrate"}, "permission denied"},
		{"ls as a role without a lease role", nobody, []string{"ls"}, "permission denied for schema lease"},
		{"events as a role without a lease role", nobody, []string{"events"}, "permission denied for schema lease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := readState(t, conn)
			env := map[string]string{"DATABASE_URL": tt.dsn}
			u, err := url.Parse(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			password, _ := u.User.Password()
			if out := checkBadInput(t, env, badInput{name: tt.name, args: tt.args, wantCode: cli.ExitFailure, want: tt.want}, password); out != "" {
				t.Errorf("stdout = %q, want nothing (the command must not run)", out)
			}
			if after := readState(t, conn); after != before {
				t.Errorf("database %+v after the refusal, want %+v unchanged", after, before)
			}
		})
	}
}

// run and release refuse bad values before they touch the database.
func TestBadValuesGetOneLine(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	held := uuid.New()
	if _, err := conn.Exec(context.Background(), `SELECT lease.acquire('acme', 'held', $1, '10 min', 'dev')`, held); err != nil {
		t.Fatal(err)
	}
	run := func(flags ...string) []string {
		return append(append([]string{"run", "--account", "acme", "--session", "s"}, flags...), "--", "sh", "-c", "echo ran")
	}
	runKey := func(account, session string) []string {
		return []string{"run", "--account", account, "--session", session, "--", "sh", "-c", "echo ran"}
	}
	release := func(account, session string) []string {
		return []string{"release", "--account", account, "--session", session, "--reason", "r"}
	}
	long := strings.Repeat("x", 513)
	tests := []badInput{
		{"run --ttl 0", run("--ttl", "0s"), cli.ExitUsage, "--ttl must be between 500ms and 24h0m0s, got 0s"},
		{"run --ttl negative", run("--ttl", "-5s"), cli.ExitUsage, "--ttl must be between 500ms and 24h0m0s, got -5s"},
		{"run --ttl huge", run("--ttl", "8760h"), cli.ExitUsage, "--ttl must be between 500ms and 24h0m0s, got 8760h0m0s"},
		{"run --ttl overflowing", run("--ttl", "99999999999h"), cli.ExitUsage, "invalid value"},
		{"run --ttl not a duration", run("--ttl", "soon"), cli.ExitUsage, "invalid value"},
		{"run empty account", runKey("", "s"), cli.ExitUsage, "--account and --session are required"},
		{"run empty session", runKey("acme", ""), cli.ExitUsage, "--account and --session are required"},
		{"run oversized session", runKey("acme", long), cli.ExitUsage, "session"},
		{"run oversized account", runKey(long, "s"), cli.ExitUsage, "account"},
		{"run control character in session", runKey("acme", "s\x1b[2J"), cli.ExitUsage, "control characters"},
		{"run invalid UTF-8 in account", runKey("acme\xff", "s"), cli.ExitUsage, "account"},
		{"run oversized holder", run("--holder", strings.Repeat("h", 257)), cli.ExitUsage, "holder"},
		{"run no command", []string{"run", "--account", "acme", "--session", "s"}, cli.ExitUsage, "no command given"},
		{"release oversized session", release("acme", long), cli.ExitUsage, "session"},
		{"release control character in account", release("ac\u009bme", "held"), cli.ExitUsage, "control characters"},
		{"release invalid UTF-8 in session", release("acme", "held\xff"), cli.ExitUsage, "session"},
		{"release oversized reason", []string{"release", "--account", "acme", "--session", "held", "--reason", strings.Repeat("r", 513)}, cli.ExitUsage, "reason"},
		{"release control character in reason", []string{"release", "--account", "acme", "--session", "held", "--reason", "stuck\x1b]0;x\x07"}, cli.ExitUsage, "reason"},
	}
	env := map[string]string{"DATABASE_URL": db.URL}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := readState(t, conn)
			if out := checkBadInput(t, env, tt); out != "" {
				t.Errorf("stdout = %q, want nothing (the command must not run)", out)
			}
			if after := readState(t, conn); after != before {
				t.Errorf("database %+v after the refusal, want %+v unchanged", after, before)
			}
		})
	}
}
