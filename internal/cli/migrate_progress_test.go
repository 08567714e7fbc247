package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// TestMigrateShowsItsWait: a migration that waits for a lock longer than
// two seconds says so on stderr (plain lines: stderr is not a terminal):
// which file, that it waits for a lock or tries again behind other
// sessions' locks, for how long. Released, it finishes as usual, its report
// alone on stdout.
func TestMigrateShowsItsWait(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `LOCK TABLE lease.session_lease IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		err := run(ctx, db.URL, &out, &errOut, "migrate", "--wait", "2m")
		done <- cli.Report(&errOut, err)
	}()
	line := regexp.MustCompile(`(?m)^migrate: applying the lease schema: (\w+\.sql: waiting for a lock \(relation\)|attempt \d+ \(other sessions held locks it needs\): \w+\.sql(: waiting for a lock \(relation\))?) [\d.]+s$`)
	defer func() { t.Logf("stderr: %q", errOut.String()) }()
	pgtest.Eventually(t, 20*time.Second, "migrate's line about its wait", func() bool { return line.MatchString(errOut.String()) })
	t.Logf("stderr: %s", strings.TrimSpace(errOut.String()))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("migrate: exit %d, stderr %q", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "lease schema version") || strings.Contains(out.String(), "waiting") {
		t.Errorf("stdout = %q, want the migration's report alone", out.String())
	}
}
