package cli_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// follow runs `leasetop events --follow --json args...` in-process with env
// until the test ends, and returns its output buffers.
func follow(t *testing.T, env map[string]string, args ...string) (out, errOut *syncbuf.Buffer) {
	t.Helper()
	out, errOut = &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	env["HOME"] = os.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, cli.Env{Args: append([]string{"events", "--follow", "--json"}, args...),
			Getenv: func(k string) string { return env[k] }, Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("events --follow returned %v after cancel, want nil", err)
		}
		if t.Failed() {
			t.Logf("stdout %q stderr %q", out.String(), errOut.String())
		}
	})
	return out, errOut
}

// printedIDs returns the ids of the JSON lines in out.
func printedIDs(t *testing.T, out string) []int64 {
	t.Helper()
	var ids []int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var ev struct{ ID int64 }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

// tableIDs returns lease.event's ids.
func tableIDs(t *testing.T, conn *pgx.Conn) []int64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT id FROM lease.event ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestEventsFollowWhereListenCannotWork: `events --follow` through a
// transaction pooler (with and without a listen DSN), on a hot standby, and
// in poll mode on request. Each says on stderr how it follows (polling, in
// one line that says why), and prints every event of lease.event exactly
// once, the history's and those committed while it follows.
func TestEventsFollowWhereListenCannotWork(t *testing.T) {
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "acme", "before", "1 min", "dev")
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
	standby := pgtest.Standby(t)
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		saying string
	}{
		{"pooler", map[string]string{"DATABASE_URL": via}, nil,
			"polling lease.event every 250ms: the connection goes through a pooler, where a LISTEN would stay behind on a shared server connection: set a listen DSN (--listen-dsn or LEASETOP_LISTEN_DSN)"},
		{"pooler with a listen DSN", map[string]string{"DATABASE_URL": via, "LEASETOP_LISTEN_DSN": db.URL}, nil,
			"following events live"},
		{"standby", map[string]string{"DATABASE_URL": db.On(t, standby)}, nil,
			"polling lease.event every 250ms: the server is a hot standby: LISTEN cannot run there"},
		{"poll on request", map[string]string{"DATABASE_URL": db.URL}, []string{"--poll", "100ms"},
			"polling lease.event every 100ms: poll mode requested"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut := follow(t, tc.env, tc.args...)
			pgtest.Eventually(t, 20*time.Second, "the history", func() bool { return strings.Contains(out.String(), `"session_id":"before"`) })
			pgtest.Eventually(t, 20*time.Second, "the line "+tc.saying, func() bool {
				return strings.Contains(errOut.String(), tc.saying+"\n")
			})
			for j := range 5 {
				acquire(t, conn, "acme", "live-"+string(rune('a'+i))+string(rune('0'+j)), "1 min", "dev")
			}
			want := tableIDs(t, conn)
			pgtest.Eventually(t, 20*time.Second, "every event", func() bool {
				return len(printedIDs(t, out.String())) >= len(want)
			})
			if got := printedIDs(t, out.String()); !slices.Equal(got, want) {
				t.Fatalf("printed ids %v, want lease.event's %v, each once in order", got, want)
			}
			if n := strings.Count(errOut.String(), "\n"); n != 1 {
				t.Errorf("stderr has %d lines %q, want the one", n, errOut.String())
			}
		})
	}
}

// TestListenFlagsBadInput: a bad --poll or --listen-dsn is one line, exit 2,
// and never shows the listen DSN's password.
func TestListenFlagsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"events", "--follow", "--poll", "1ms"}, "--poll must be between 10ms and 1m0s, got 1ms"},
		{[]string{"events", "--follow", "--poll", "-1s"}, "--poll must be between 10ms and 1m0s, got -1s"},
		{[]string{"events", "--follow", "--listen-dsn", "postgres://u:hunter2@host:notaport/db"},
			"listen DSN: invalid database URL"},
		{[]string{"run", "--account", "a", "--session", "s", "--poll", "2m", "--", "true"}, "--poll must be between 10ms and 1m0s, got 2m0s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := leasetop(ctx, db.URL, tc.args...)
			// A password in --listen-dsn is visible in the process list
			// whatever else is wrong: its warning comes first, once.
			const warning = "leasetop: warning: --listen-dsn carries a password"
			if want := strings.Contains(strings.Join(tc.args, " "), "hunter2"); strings.HasPrefix(errOut, warning) != want {
				t.Errorf("stderr %q: the --listen-dsn password warning first: %v, want %v", errOut, !want, want)
			}
			if strings.HasPrefix(errOut, warning) {
				_, errOut, _ = strings.Cut(errOut, "\n")
			}
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Errorf("code %d, stdout %q, stderr %q; want 2 and one line with %q", code, out, errOut, tc.want)
			}
			if strings.Contains(errOut, "hunter2") {
				t.Errorf("stderr %q shows the password", errOut)
			}
		})
	}
}

// TestPoolerAndStandbyRefusalsAreOneLine: through a real PgBouncer a
// connection-string setting the pooler refuses, or a statement cache it
// breaks, is one line that says what to change (exit 2); a write on a hot
// standby says it needs the primary (exit 1). None shows the password.
func TestPoolerAndStandbyRefusalsAreOneLine(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 1}))
	standby := pgtest.Standby(t)
	cached := via + "&default_query_exec_mode=cache_statement"
	if _, errOut, code := leasetop(ctx, cached, "ls"); code != 0 { // prepares on the pooler's one server connection
		t.Fatalf("the first ls with a statement cache: exit %d, %s", code, errOut)
	}
	for _, tc := range []struct {
		name string
		dsn  string
		args []string
		code int
		want string
	}{
		{"startup parameter", via + "&search_path=public", []string{"ls"}, 2,
			"unsupported startup parameter: search_path: the pooler refuses this connection-string parameter: remove it from the connection string"},
		{"statement cache", cached, []string{"ls"}, 2,
			"set default_query_exec_mode=cache_describe (or exec) in the connection string"},
		{"write on a standby", db.On(t, standby), []string{"release", "--account", "a", "--session", "s", "--reason", "r"}, 1,
			"the server is read-only (a hot standby?): writes need the primary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := leasetop(ctx, tc.dsn, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and one line with %q", code, out, errOut, tc.code, tc.want)
			}
			if u, _ := url.Parse(db.URL); strings.Contains(errOut, passwordOf(u)) {
				t.Errorf("stderr %q shows the password", errOut)
			}
		})
	}
}

// passwordOf returns u's password.
func passwordOf(u *url.URL) string {
	p, _ := u.User.Password()
	return p
}

// TestCommandsThroughPooler: the one-shot commands through a real PgBouncer
// in transaction mode with one server connection, so every command's
// statements land where the previous command's were: migrate (twice, the
// second over the first), ls, events and release all succeed.
func TestCommandsThroughPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	via := db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 1}))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate"}, ""},
		{[]string{"migrate", "--notify-renewals=false"}, ""},
		{[]string{"ls"}, ""},
		{[]string{"events"}, ""},
		{[]string{"release", "--account", "acme", "--session", "pooled", "--reason", "through the pooler"}, "released acme/pooled"},
		{[]string{"events", "--json"}, `"kind":"force_released"`},
	} {
		if len(tc.args) > 1 && tc.args[0] == "release" {
			acquire(t, db.Conn(t), "acme", "pooled", "1 min", "dev")
		}
		out, errOut, code := leasetop(ctx, via, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%s through PgBouncer: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}
