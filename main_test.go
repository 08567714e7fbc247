package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// leasetop runs the command in-process and returns its stdout, stderr and
// exit code.
func leasetop(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	err := run(context.Background(), args, getenv, strings.NewReader(""), &out, &errOut)
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

func TestMigrateCommand(t *testing.T) {
	db := pgtest.NewEmpty(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	out, errOut, code := leasetop(t, env, "migrate")
	if code != 0 || !strings.Contains(out, "created lease schema version") {
		t.Fatalf("first migrate: code %d, out %q, err %q; want 0 and created", code, out, errOut)
	}
	out, _, code = leasetop(t, env, "migrate", "--dsn", db.URL)
	if code != 0 || !strings.Contains(out, "is current") || !strings.Contains(out, "the lease functions run as lease_owner") {
		t.Fatalf("second migrate: code %d, out %q; want 0, current, run as lease_owner", code, out)
	}
}

func TestBadInputGetsOneLine(t *testing.T) {
	empty := pgtest.NewEmpty(t)
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		want     string
	}{
		{"unknown command", nil, []string{"frobnicate"}, cli.ExitUsage, "unknown command"},
		{"migrate with an argument", nil, []string{"migrate", "extra"}, cli.ExitUsage, "takes no arguments"},
		{"invalid DSN", nil, []string{"migrate", "--dsn", "postgres://u:hunter2@[::1/db"}, cli.ExitUsage, "invalid database URL"},
		{"unreachable host", nil, []string{"migrate", "--dsn", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2"}, cli.ExitFailure, "cannot connect to 127.0.0.1:1/db"},
		{"wrong password", nil, []string{"migrate", "--dsn", withPassword(t, empty.URL, "hunter2")}, cli.ExitFailure, "password authentication failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := leasetop(t, tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			errOut, _ := splitDSNWarning(stderr)
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", errOut, tt.want)
			}
			if strings.Contains(out+errOut, "hunter2") {
				t.Errorf("output reveals the password: %q %q", out, errOut)
			}
		})
	}
}

// withPassword returns url with its password replaced.
func withPassword(t *testing.T, url, password string) string {
	t.Helper()
	at := strings.Index(url, "@")
	colon := strings.LastIndex(url[:at], ":")
	return url[:colon+1] + password + url[at:]
}
