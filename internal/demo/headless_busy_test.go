package demo_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// busyCounts are the summary's counts of the busy strategies.
var busyCounts = []string{
	"preempts (a new message stopped the run)",
	"joins (followed the running run's stream)",
	"queue waits (tickets taken, served in order)",
	"hand-overs (continue on this device)",
}

// runHeadless runs a 16 s headless demo with a 2 s TTL on a database of
// its own and returns its stdout, failing the test unless it exits 0 with
// every invariant ok.
func runHeadless(t *testing.T, args ...string) string {
	t.Helper()
	db := pgtest.New(t)
	p := startLeasetop(t, append([]string{"demo", "--headless", "--duration", "16s", "--ttl", "2s", "--dsn", db.URL}, args...)...)
	code := p.wait(90 * time.Second)
	out := p.stdout()
	if code != 0 {
		t.Fatalf("leasetop demo --headless %s exited %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, p.stderr.String())
	}
	for n := 1; n <= 8; n++ {
		if !regexp.MustCompile(`(?m)^  ok    ` + strconv.Itoa(n) + `\. `).MatchString(out) {
			t.Errorf("invariant %d is not reported ok:\n%s", n, out)
		}
	}
	return out
}

// TestHeadlessDemoSeedsPassWithEveryStrategy: with every strategy in the
// mix (the default), a few seeds each pass all six invariants, and between
// them the devices preempted, joined and queued, each counted in the
// summary and per device.
func TestHeadlessDemoSeedsPassWithEveryStrategy(t *testing.T) {
	t.Parallel()
	seeds := []int{7, 11}
	outs := make([]string, len(seeds))
	t.Run("seeds", func(t *testing.T) {
		for i, seed := range seeds {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				outs[i] = runHeadless(t, "--seed", fmt.Sprint(seed))
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, name := range busyCounts {
		total := 0
		for _, out := range outs {
			total += summaryCount(t, out, name)
		}
		if total == 0 {
			t.Errorf("summary: %s = 0 over seeds %v, want some", name, seeds)
		}
	}
	all := strings.Join(outs, "\n")
	if !regexp.MustCompile(`(?m)^      busy: .*\d+ (preempts?|joins?|queue waits?)`).MatchString(all) {
		t.Errorf("no device's busy line in the devices blocks:\n%s", all)
	}
}

// TestHeadlessClassicMixOnlyTriesAndWaits: --strategy classic is the demo
// before the busy strategies: no preempt, no join, no queue.
func TestHeadlessClassicMixOnlyTriesAndWaits(t *testing.T) {
	t.Parallel()
	out := runHeadless(t, "--seed", "3", "--strategy", "classic")
	for _, name := range busyCounts {
		if got := summaryCount(t, out, name); got != 0 {
			t.Errorf("summary: %s = %d with --strategy classic, want 0\n%s", name, got, out)
		}
	}
	if summaryCount(t, out, "refusals (busy: owner and time left shown)") == 0 {
		t.Errorf("no refusal with --strategy classic:\n%s", out)
	}
}
