package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// Bad input for `leasetop watch`, which refuses to run without a terminal
// before it connects: so each case runs with a real pseudo-terminal as its
// stdin and stdout. Each gets one line on stderr with its documented exit
// code, never the password, and the terminal is left untouched (the screen
// is never taken over).
func TestWatchBadInput(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	empty := pgtest.NewEmpty(t)
	older, newer := pgtest.New(t), pgtest.New(t)
	for db, v := range map[pgtest.DB]int{older: leasesql.Version - 1, newer: leasesql.Version + 1} {
		if _, err := db.Conn(t).Exec(context.Background(), `UPDATE lease.schema_version SET version = $1`, v); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		dsn      string
		wantCode int
		want     string
	}{
		{"invalid DSN", "postgres://u:hunter2@[::1/db", cli.ExitUsage, "invalid database URL"},
		{"unreachable host", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2", cli.ExitFailure, "cannot connect to 127.0.0.1:1/db"},
		{"wrong password", withPassword(t, db.URL, "hunter2"), cli.ExitFailure, "password authentication failed"},
		{"database without the schema", empty.URL, cli.ExitSchema, "database has no lease schema: run leasetop migrate"},
		{"older schema", older.URL, cli.ExitSchema, fmt.Sprintf("lease schema is at version %d, this leasetop needs %d: run leasetop migrate", leasesql.Version-1, leasesql.Version)},
		{"newer schema", newer.URL, cli.ExitSchema, fmt.Sprintf("is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop", leasesql.Version+1, leasesql.Version)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openPTY(t, 80, 24)
			p.readOutput()
			var stderr bytes.Buffer
			err := cli.Run(context.Background(), cli.Env{Args: []string{"watch", "--dsn", tt.dsn},
				Getenv: func(string) string { return "" }, Stdin: p.term, Stdout: p.term, Stderr: &stderr})
			code := cli.Report(&stderr, err)
			screen := p.drain()
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			// Every --dsn here carries a password: a warning line about it comes
			// first, then the one line about the input.
			got := stderr.String()
			if first, rest, _ := strings.Cut(got, "\n"); strings.HasPrefix(first, "leasetop: warning: --dsn carries a password") {
				got = rest
			}
			if strings.Count(got, "\n") != 1 || !strings.Contains(got, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", got, tt.want)
			}
			if strings.Contains(stderr.String()+screen, "hunter2") {
				t.Errorf("the output reveals the password: %q %q", stderr.String(), screen)
			}
			if screen != "" {
				t.Errorf("the terminal got %q, want it untouched", screen)
			}
			t.Logf("BADINPUT watch %s: exit %d: %s", tt.name, code, strings.TrimSpace(got))
		})
	}
}

// withPassword returns dsn with its password replaced.
func withPassword(t *testing.T, dsn, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}
