package sqlcall

import (
	"strings"
	"testing"
)

// TestOnlyReleaseCommitsAsynchronously: a release lost in a crash is
// harmless (the lease expires by itself), an acquire or a renewal is not:
// only the release's transaction may skip waiting for its flush. Each opts
// out of the trigger's NOTIFY, in its setup or its call's WHERE, as its
// notification is sent after; the plain call (Options.Plain) does neither.
func TestOnlyReleaseCommitsAsynchronously(t *testing.T) {
	const async = `set_config('synchronous_commit', 'off', true)`
	tests := []struct {
		name  string
		q     QuietCall
		async bool
	}{
		{"acquire", AcquireQuiet, false},
		{"release", ReleaseQuiet, true},
		{"acquire_with", AcquireWithQuiet, false},
		{"preempt", PreemptQuiet, false},
	}
	for _, tt := range tests {
		txn := tt.q.Setup + "\n" + tt.q.Call.SQL
		if got := strings.Contains(txn, async); got != tt.async {
			t.Errorf("%s's transaction commits asynchronously: %v, want %v (%q)", tt.name, got, tt.async, txn)
		}
		if !strings.Contains(txn, OptOut) {
			t.Errorf("%s's transaction %q does not opt out of the trigger's NOTIFY", tt.name, txn)
		}
		if plain := tt.q.Plain; plain != "" && (strings.Contains(plain, OptOut) || strings.Contains(plain, async)) {
			t.Errorf("%s's plain call %q opts out or commits asynchronously", tt.name, plain)
		}
		if strings.Contains(tt.q.Setup, "$1") {
			t.Errorf("%s's setup %q takes parameters; Run sends it without", tt.name, tt.q.Setup)
		}
	}
}
