package cli_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestCompleteFlagsOfEveryCommand: for every command, completing "--"
// offers exactly the flags its -h lists (completion learns them from the
// command itself, so none is missing or stale).
func TestCompleteFlagsOfEveryCommand(t *testing.T) {
	ctx := context.Background()
	names, _, _ := leasetop(ctx, "", "__complete", "")
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)`)
	for _, name := range strings.Split(strings.TrimSpace(names), "\n")[1:] {
		if name == "help" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			help, stderr, code := leasetop(ctx, "", name, "-h")
			if code != 0 {
				t.Fatalf("%s -h: exit %d, stderr %q", name, code, stderr)
			}
			var want []string
			for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
				want = append(want, "--"+m[1])
			}
			slices.Sort(want)
			out, _, _ := leasetop(ctx, "", "__complete", name, "--")
			got := strings.Split(strings.TrimSpace(out), "\n")
			if got[0] != ":nofiles" || strings.Join(got[1:], " ") != strings.Join(want, " ") {
				t.Errorf("__complete %s -- = %q, want :nofiles and %q", name, got, want)
			}
		})
	}
}

// TestCompleteIsBoundedWithoutAnswer: a database that does not answer the
// read (another session holds the lease table in ACCESS EXCLUSIVE mode)
// costs a completion its bound, not the user's shell: no candidate, no
// error, exit 0, and no lock left waiting.
func TestCompleteIsBoundedWithoutAnswer(t *testing.T) {
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
	type answer struct {
		out, stderr string
		code        int
		took        time.Duration
	}
	done := make(chan answer, 1)
	go func() {
		start := time.Now()
		out, stderr, code := leasetop(ctx, db.URL, "__complete", "release", "--account", "")
		done <- answer{out, stderr, code, time.Since(start)}
	}()
	select {
	case a := <-done:
		if a.code != 0 || a.stderr != "" || a.out != ":nofiles\n" {
			t.Errorf("__complete against a locked table: exit %d, stdout %q, stderr %q; want 0, only :nofiles, nothing", a.code, a.out, a.stderr)
		}
		t.Logf("gave up after %s", a.took.Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("__complete still waits for the locked table after 30 s, want its 2 s bound")
	}
	conn := db.Conn(t)
	pgtest.Eventually(t, 10*time.Second, "the completion's session to leave the server", func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'leasetop completion'`).Scan(&n)
		return err == nil && n == 0
	})
}
