package sql_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	leasesql "github.com/leasetop/leasetop/sql"
)

// TestFenceRaceChecksSkipTheSameKinds: every fence-race check (lease.acquire
// in functions.sql, lease.preempt in preempt.sql, any to come) reads the
// key's latest ownership events and must skip the same kinds, the ones that
// carry a fence but move no lease: rejected renewals, the queue's tickets
// and the hand-over's asks. handed_over is an ownership change and must not
// be skipped.
func TestFenceRaceChecksSkipTheSameKinds(t *testing.T) {
	want := []string{"handover_asked", "handover_declined", "handover_expired", "queue_joined", "queue_left", "renew_rejected"}
	list := regexp.MustCompile(`(?s)e\.kind NOT IN \(([^)]*)\)`)
	found := map[string]bool{}
	for _, f := range leasesql.Files() {
		for _, m := range list.FindAllStringSubmatch(f.SQL, -1) {
			var kinds []string
			for _, k := range strings.Split(m[1], ",") {
				kinds = append(kinds, strings.Trim(strings.TrimSpace(k), "'"))
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, want) {
				t.Errorf("%s: a fence-race check skips %v, want %v", f.Name, kinds, want)
			}
			found[f.Name] = true
		}
	}
	if !found["functions.sql"] || !found["preempt.sql"] {
		t.Errorf("fence-race checks found in %v, want functions.sql (acquire) and preempt.sql (preempt)", found)
	}
}
