package sqlcall

import (
	"strings"
	"testing"
)

// TestOnlyReleaseCommitsAsynchronously: a release lost in a crash is
// harmless (the lease expires by itself), an acquire or a renewal is not:
// only the release's transaction may skip waiting for its flush. Both opt
// out of the trigger's NOTIFY, as their notification is sent after.
func TestOnlyReleaseCommitsAsynchronously(t *testing.T) {
	const async = `set_config('synchronous_commit', 'off', true)`
	tests := []struct {
		name  string
		q     CommitThenNotify
		async bool
	}{
		{"acquire", AcquireThenNotify, false},
		{"release", ReleaseThenNotify, true},
		{"acquire_with", AcquireWithThenNotify, false},
		{"preempt", PreemptThenNotify, false},
	}
	for _, tt := range tests {
		if got := strings.Contains(tt.q.Setup, async); got != tt.async {
			t.Errorf("%s's transaction commits asynchronously: %v, want %v (setup %q)", tt.name, got, tt.async, tt.q.Setup)
		}
		if !strings.Contains(tt.q.Setup, optOut) {
			t.Errorf("%s's setup %q does not opt out of the trigger's NOTIFY", tt.name, tt.q.Setup)
		}
		if strings.Contains(tt.q.Setup, "$1") {
			t.Errorf("%s's setup %q takes parameters; Run sends it without", tt.name, tt.q.Setup)
		}
	}
}
