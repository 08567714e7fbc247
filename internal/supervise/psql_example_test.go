package supervise_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// docExample returns the first ```sql block of a doc that contains marker.
func docExample(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```sql\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, marker) {
			return block
		}
	}
	t.Fatalf("%s has no ```sql block with %q", doc, marker)
	return ""
}

// TestPsqlFencedWriteExample runs docs/run.md's psql example as written:
// under leasetop run it writes with the lease's fence; with the token of a
// run that does not hold the lease it writes nothing and psql fails.
func TestPsqlFencedWriteExample(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql not found (%v): apt-get install postgresql-client", err)
	}
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `CREATE TABLE job_output (session_id text, fence bigint, body text)`); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "fenced-write.sql")
	if err := os.WriteFile(script, []byte(docExample(t, "../../docs/run.md", `\getenv`)), 0o600); err != nil {
		t.Fatal(err)
	}
	psqlArgs := []string{psql, "-X", "-q", "-d", e.db.URL, "-f", script}

	p := e.leasetop(t, append([]string{"run", "--account", testKey.Account, "--session", testKey.Session, "--"}, psqlArgs...)...)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("leasetop run -- psql -f fenced-write.sql: exit %d, want 0; stderr: %s", code, p.Stderr.String())
	}
	acquired, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindAcquired })
	if !ok {
		t.Fatal("no acquired event")
	}
	var session, body string
	var fence int64
	if err := e.pool.QueryRow(ctx, `SELECT session_id, fence, body FROM job_output`).Scan(&session, &fence, &body); err != nil {
		t.Fatalf("the example wrote no row (or more than one): %v", err)
	}
	if session != testKey.Session || fence != acquired.Fence || body != "nightly report" {
		t.Errorf("job_output row = (%q, %d, %q), want (%q, %d, %q)", session, fence, body, testKey.Session, acquired.Fence, "nightly report")
	}

	// A stale token: the run that had the lease released it.
	stale := exec.Command(psqlArgs[0], psqlArgs[1:]...)
	stale.Env = append(os.Environ(), "LEASETOP_ACCOUNT_ID="+testKey.Account, "LEASETOP_SESSION_ID="+testKey.Session,
		"LEASETOP_RUN_ID="+uuid.NewString(), "LEASETOP_FENCE="+strconv.FormatInt(acquired.Fence, 10))
	out, err := stale.CombinedOutput()
	if code := stale.ProcessState.ExitCode(); err == nil || code != 3 || !strings.Contains(string(out), "fence check failed") {
		t.Errorf("psql with a stale token: exit %d (%v), output %q; want exit 3 and the fence check failure", code, err, out)
	}
	var rows int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM job_output`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("job_output has %d rows (%v) after the stale run, want the 1 from before", rows, err)
	}
}
