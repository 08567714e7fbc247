package pgtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PSQLPath finds psql: on PATH, else next to the server binaries. It fails
// t, saying how to install it, when there is none.
func PSQLPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if ps, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql"); len(ps) > 0 {
		return ps[len(ps)-1]
	}
	t.Fatal("psql not found: install the PostgreSQL client (apt-get install postgresql-client)")
	return ""
}

// PSQL runs one SQL command in its own psql process bin (an independent
// client, as a shell script would be) on dsn and returns its unaligned
// output; it fails t if psql fails.
func PSQL(t testing.TB, bin, dsn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql -c %q: %v: %s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}
