package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// docBlocks returns the contents of the n fenced code blocks that follow
// marker in the Markdown file at path.
func docBlocks(t *testing.T, path, marker string, n int) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("%s has no %q", path, marker)
	}
	blocks := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(s[i:], n)
	if len(blocks) < n {
		t.Fatalf("%s has %d code blocks after %q, want %d", path, len(blocks), marker, n)
	}
	out := make([]string, n)
	for j, m := range blocks {
		out[j] = m[1]
	}
	return out
}

// statements splits a SQL block into its statements (none of docs/production.md's
// has a semicolon inside a literal other than a dollar-quoted body).
func statements(block string) []string {
	var out []string
	for _, s := range regexp.MustCompile(`(?s)(?:[^;$]|\$\$.*?\$\$)+;`).FindAllString(block, -1) {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if c := strings.Index(l, "--"); c >= 0 {
				l = l[:c]
			}
			lines = append(lines, l)
		}
		if st := strings.TrimSpace(strings.Join(lines, "\n")); st != ";" {
			out = append(out, st)
		}
	}
	return out
}

// TestProductionSetUp follows docs/production.md's "Set up, in this order" and its
// PgBouncer example word for word (the database renamed, the passwords
// filled in): the roles and database as a superuser, migrate as the
// CREATEROLE migrator, then the logins, then PgBouncer in transaction mode
// with the document's auth_query through its lookup function. A program logs
// in as backend through that PgBouncer and takes and releases a lease;
// sre_ro lists the leases through it; mover preempts a lease backend holds.
// A superuser's password is never looked up through the function.
func TestProductionSetUp(t *testing.T) {
	ctx := context.Background()
	setUp := docBlocks(t, "docs/production.md", "**Set up, in this order.**", 3)
	bouncer := docBlocks(t, "docs/production.md", "**PgBouncer** in transaction mode", 3) // SQL, pgbouncer.ini, userlist.txt
	name := "readme_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	fill := func(sql string) string {
		sql = regexp.MustCompile(`\bapp\b`).ReplaceAllString(sql, name)
		return strings.ReplaceAll(sql, "'...'", "'pw-readme'")
	}
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	t.Cleanup(func() {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		for _, r := range []string{"backend", "sre_ro", "sre", "mover", "pgbouncer_auth", "migrator"} {
			_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+r)
		}
	})
	as := func(user string) string {
		u, err := url.Parse(pgserver.WithDatabase(pgtest.AdminURL(), name))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(user, "pw-readme")
		return u.String()
	}
	exec := func(dsn, block string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, st := range statements(fill(block)) {
			if _, err := conn.Exec(ctx, st); err != nil {
				t.Fatalf("%s: %v", st, err)
			}
		}
	}

	exec(pgtest.AdminURL(), setUp[0]) // 1. as a superuser
	migrate := strings.Fields(fill(setUp[1]))
	if len(migrate) < 4 || migrate[len(migrate)-4] != "leasetop" || migrate[len(migrate)-3] != "migrate" {
		t.Fatalf("step 2 is %q, want leasetop migrate --dsn …", setUp[1])
	}
	if out, errOut, code := leasetop(t, nil, "migrate", "--dsn", as("migrator")); code != 0 {
		t.Fatalf("step 2, migrate as migrator: exit %d: %s%s", code, out, errOut)
	}
	exec(as("migrator"), setUp[2])                                   // 3. the logins, as migrator
	exec(pgserver.WithDatabase(pgtest.AdminURL(), name), bouncer[0]) // PgBouncer's lookup, as a superuser

	ini := map[string]string{}
	for _, l := range strings.Split(bouncer[1], "\n") {
		if k, v, ok := strings.Cut(l, " = "); ok && !strings.HasPrefix(l, ";") {
			ini[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if ini["pool_mode"] != "transaction" || ini["auth_user"] != "pgbouncer_auth" || ini["auth_query"] == "" {
		t.Fatalf("docs/production.md's pgbouncer.ini: pool_mode %q, auth_user %q, auth_query %q", ini["pool_mode"], ini["auth_user"], ini["auth_query"])
	}
	// The auth file: the document's line with auth_user's password, and the
	// harness's superuser, whom PgBouncer's readiness check logs in as.
	su, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	suPassword, _ := su.User.Password()
	if !strings.HasPrefix(bouncer[2], `"pgbouncer_auth" "..."`) {
		t.Fatalf("docs/production.md's userlist.txt is %q", bouncer[2])
	}
	users := strings.ReplaceAll(bouncer[2], "...", "pw-readme") + `"` + su.User.Username() + `" "` + suPassword + `"` + "\n"
	dir, err := os.MkdirTemp("", "leasetop-readme-") // t.TempDir's parent is closed to PgBouncer's user
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	authFile := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(authFile, []byte(users), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolMode: ini["pool_mode"], Settings: map[string]string{
		"auth_user": ini["auth_user"], "auth_query": ini["auth_query"], "auth_file": authFile,
	}})

	via := func(user string) string {
		dsn, err := b.Via(as(user))
		if err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	s, err := data.Open(ctx, via("backend"))
	if err != nil {
		t.Fatalf("backend through PgBouncer: %v", err)
	}
	defer s.Close()
	if s.Pool().Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		t.Error("backend's store through PgBouncer caches prepared statements: it did not notice the pooler")
	}
	k, run := data.Key{Account: "acme", Session: "readme"}, uuid.New()
	if _, err := s.Acquire(ctx, k, run, time.Minute, "readme"); err != nil {
		t.Fatalf("Acquire as backend through PgBouncer: %v", err)
	}
	if out, errOut, code := leasetop(t, nil, "ls", "--dsn", via("sre_ro")); code != 0 || !strings.Contains(out, "readme") {
		t.Errorf("ls as sre_ro through PgBouncer: exit %d: %s%s", code, out, errOut)
	}
	if ok, err := s.Release(ctx, k, run); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// The login that may preempt takes a session backend holds.
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "readme"); err != nil {
		t.Fatalf("Acquire as backend through PgBouncer: %v", err)
	}
	mover, err := data.Open(ctx, via("mover"))
	if err != nil {
		t.Fatalf("mover through PgBouncer: %v", err)
	}
	defer mover.Close()
	if _, err := mover.Preempt(ctx, k, uuid.New(), time.Minute, "mover", "README set-up", data.AcquireOptions{}); err != nil {
		t.Fatalf("Preempt as mover through PgBouncer: %v", err)
	}
	if evs, err := s.EventsFor(ctx, k, 1); err != nil || len(evs) != 1 || evs[0].Kind != data.KindPreempted || evs[0].Actor != "mover" {
		t.Errorf("last event = %+v, %v; want preempted by mover", evs, err)
	}
	lookup, err := pgx.Connect(ctx, as("pgbouncer_auth"))
	if err != nil {
		t.Fatal(err)
	}
	defer lookup.Close(ctx)
	var n int
	if err := lookup.QueryRow(ctx, `SELECT count(*) FROM pgbouncer.user_lookup($1) WHERE passwd IS NOT NULL`, su.User.Username()).Scan(&n); err != nil || n != 0 {
		t.Errorf("the lookup function gave %d secrets of the superuser %s (%v), want none", n, su.User.Username(), err)
	}
}
