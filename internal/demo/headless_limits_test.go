package demo_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// brokenTakeSlots replaces lease.take_slots with one that never takes a
// slot: it answers "no limit applies", so every grant of a limited account
// goes through, whatever its limit.
const brokenTakeSlots = `
CREATE OR REPLACE FUNCTION lease.take_slots(account_id text, session_id text, pool text, now_ timestamptz)
RETURNS lease.limit_slot[]
LANGUAGE sql VOLATILE
AS $fn$ SELECT NULL::lease.limit_slot[] $fn$`

// TestHeadlessDemoFailsOnABrokenLimit proves the demo's limit invariant is
// not one that cannot fail: with a lease.take_slots that takes no slot,
// acme's free plan (1 live run) is exceeded, and the same demo reports
// invariant 9 broken and exits 1.
func TestHeadlessDemoFailsOnABrokenLimit(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	if _, err := db.Pool(t).Exec(context.Background(), brokenTakeSlots); err != nil {
		t.Fatalf("install the broken take_slots: %v", err)
	}
	p := startLeasetop(t, "demo", "--headless", "--duration", "8s", "--ttl", "2s", "--seed", "5", "--no-chaos", "--dsn", db.URL)
	code := p.wait(60 * time.Second)
	out := p.stdout()
	if code != 1 {
		t.Fatalf("exit code = %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, p.stderr.String())
	}
	if !regexp.MustCompile(`(?m)^  FAIL  9\. never more holders of an account than its limit`).MatchString(out) ||
		!strings.Contains(out, "had a limit of 1 and 1 other runs held it") {
		t.Errorf("the summary does not report the account over its limit:\n%s", out)
	}
	if regexp.MustCompile(`(?m)^  FAIL  1\.`).MatchString(out) {
		t.Errorf("the broken limit broke invariant 1 too; want only the limit:\n%s", out)
	}
}
