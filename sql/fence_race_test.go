package sql_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	leasesql "github.com/leasetop/leasetop/sql"
)

// TestFenceRaceChecksSkipTheSameKinds: the fence-race check
// (lease.higher_fences in fence.sql, which lease.acquire and
// lease.preempt read) reads the key's latest ownership events and must skip
// the kinds that carry a fence but move no lease: rejected renewals, the
// queue's tickets, the hand-over's asks and the inbox's messages (whose
// message_sent may come between a release and a racing grant, with no
// fence at all). handed_over is an ownership change and must not be
// skipped. There is one such list, read by one check
// (lease.check_fence_race), and every function that INSERTs a lease row
// with a fence drawn first calls it.
func TestFenceRaceChecksSkipTheSameKinds(t *testing.T) {
	want := []string{"handover_asked", "handover_declined", "handover_expired",
		"limit_refused", "limit_removed", "limit_set",
		"message_acked", "message_carried", "message_delivered", "message_expired", "message_sent",
		"queue_joined", "queue_left", "renew_rejected"}
	list := regexp.MustCompile(`(?s)e\.kind::pg_catalog\.text OPERATOR\(pg_catalog\.<>\) ALL \(ARRAY\[([^\]]*)\]`)
	found := map[string]int{}
	calls := map[string]int{}
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
			found[f.Name]++
		}
		calls[f.Name] = strings.Count(f.SQL, "PERFORM lease.check_fence_race(")
		if n := strings.Count(f.SQL, "EXISTS (SELECT FROM lease.higher_fences("); n != 0 && f.Name != "fence.sql" {
			t.Errorf("%s reads lease.higher_fences %d times itself, want it to call lease.check_fence_race", f.Name, n)
		}
	}
	if len(found) != 1 || found["fence.sql"] != 1 {
		t.Errorf("fence-race lists found in %v, want one, in fence.sql (lease.higher_fences)", found)
	}
	if calls["acquire.sql"] != 1 || calls["preempt.sql"] != 1 {
		t.Errorf("calls of lease.check_fence_race: %v, want one in acquire.sql (acquire) and one in preempt.sql (preempt)", calls)
	}
}
