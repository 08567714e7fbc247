package bench

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

func TestScratchDDL(t *testing.T) {
	t.Parallel()
	stmts, err := scratchDDL("lease_bench_x", "lease_bench_x")
	if err != nil {
		t.Fatalf("scratchDDL: %v", err)
	}
	all := strings.Join(stmts, "\n")
	silent := stmts[slices.IndexFunc(stmts, func(s string) bool { return strings.Contains(s, ".on_change_silent()\nRETURNS") })]
	if i := slices.IndexFunc(stmts, func(s string) bool { return strings.Contains(s, `"lease_bench_x".higher_fences_acquire_ev(`) }); i < 0 ||
		!strings.Contains(stmts[i], `FROM "lease_bench_x".event e`) {
		t.Errorf("acquire_ev's fence-race check is not copied onto the scratch events")
	}
	if strings.Contains(silent, "pg_notify") {
		t.Errorf("on_change_silent still notifies:\n%s", silent)
	}
	tests := []struct {
		name     string
		contains string
		want     bool
	}{
		{"acquire copied", `FUNCTION "lease_bench_x".acquire(`, true},
		{"renew copied", `FUNCTION "lease_bench_x".renew(`, true},
		{"acquire writes the copy", `INSERT INTO "lease_bench_x".plain_lease AS l`, true},
		{"copy draws from its own sequence", `nextval('"lease_bench_x".fence_seq')`, true},
		{"no write to the real table", `lease.session_lease AS l`, false},
		{"no real renew", `UPDATE lease.session_lease`, false},
		{"event_json untouched", `lease.event_json(ev)`, true},
		{"grant type untouched", `SETOF lease.grant`, true},
		{"renewal notifies its own channel", `pg_notify('lease_bench_x'`, true},
		{"event-only acquire copied", `FUNCTION "lease_bench_x".acquire_ev(`, true},
		{"event-only acquire writes its table", `INSERT INTO "lease_bench_x".event_lease AS l`, true},
		{"renamed copy renames its parameters", `VALUES (acquire_ev.account_id, acquire_ev.session_id`, true},
		{"silent trigger writes the event copy", `INSERT INTO "lease_bench_x".event (at, kind`, true},
		{"silent trigger is attached", `AFTER INSERT ON "lease_bench_x".event_lease`, true},
		{"silent trigger function is used", `EXECUTE FUNCTION "lease_bench_x".on_change_silent()`, true},
		{"takeover trigger keeps its WHEN", `WHEN (OLD.run_id IS DISTINCT FROM NEW.run_id`, true},
		{"never the real channel", `'lease_events'`, false},
		{"renew calls its own zombie rule", `PERFORM "lease_bench_x".record_zombie_renew(renew.account_id`, true},
		{"the zombie rule's copy writes the scratch events", `INSERT INTO "lease_bench_x".event (at, kind, account_id, session_id, run_id, fence, expires_at, holder, reason)`, true},
		{"acquire checks its fence race on its own copy", `PERFORM "lease_bench_x".check_fence_race_acquire('acquire', acquire.account_id`, true},
		{"the race check's copy reads its own fence copy", `EXISTS (SELECT FROM "lease_bench_x".higher_fences_acquire(check_fence_race_acquire.account_id`, true},
		{"no real race check", `lease.check_fence_race(`, false},
		{"no real zombie rule", `lease.record_zombie(`, false},
		{"no real fence check", `lease.higher_fences(`, false},
		{"acquire asks its own sequence whether its fence was overtaken", `"lease_bench_x".fence_overtaken_acquire(granted.fence)`, true},
		{"the overtaken check's copy reads the scratch sequence", `pg_sequence_last_value('"lease_bench_x".fence_seq'`, true},
		{"no real overtaken check", `lease.fence_overtaken(`, false},
	}
	for _, tt := range tests {
		if got := strings.Contains(all, tt.contains); got != tt.want {
			t.Errorf("%s: contains %q = %t, want %t", tt.name, tt.contains, got, tt.want)
		}
	}
}

// TestScratchCallsWriteNothingReal holds every lease.* function the scratch
// copies still call in schema lease to a list of functions that write
// nothing: a helper added to a copied function that writes lease.event (as
// lease.record_zombie does) must be copied too (helpers in sqlcopy.go).
func TestScratchCallsWriteNothingReal(t *testing.T) {
	t.Parallel()
	stmts, err := scratchDDL("lease_bench_x", "lease_bench_x")
	if err != nil {
		t.Fatalf("scratchDDL: %v", err)
	}
	readOnly := map[string]string{
		"public_run_id": "", "public_run_id_of": "", "safe_text": "", "key_ok": "", "ttl_ok": "", "grant_ok": "", "refuse_grant": "",
		"check_key": "", "check_ttl": "", "check_ttl_span": "", "check_label": "", "check_run_id": "",
		"event_json": "", "queue_admits": "", "pending_key": "",
		"follow_failover": "moves the real sequences after a failover, as every real write does",
		"queue_granted":   "runs only when lease.queue_ticket holds a ticket for a bench key, which nobody takes",
		"check_pool":      "",
		"take_slots":      "runs only when lease.account_limit holds a limit of a scratch workload's account, which nobody sets",
		"slots_granted":   "a no-op without take_slots' slots",
		// The account's queue, like take_slots, only under a limit.
		"slot_gate_admits": "",
		"limit_refused":    "runs only when lease.account_limit holds a limit of a scratch workload's account, which nobody sets",
		"slot_wait":        "runs only when lease.account_limit holds a limit of a scratch workload's account, which nobody sets",
	}
	calls := regexp.MustCompile(`\blease\.([a-z_]+)\(`)
	for _, m := range calls.FindAllStringSubmatch(strings.Join(stmts, "\n"), -1) {
		if _, ok := readOnly[m[1]]; !ok {
			t.Errorf("a scratch copy calls lease.%s, which is not known to write nothing: copy it (helpers in sqlcopy.go)", m[1])
		}
	}
}

func TestExtractFunctionMissing(t *testing.T) {
	t.Parallel()
	if _, err := extractFunction("CREATE TABLE x ();", "acquire"); err == nil {
		t.Error("extractFunction of a missing function: err = nil, want an error")
	}
}

// TestScratchCalls checks that each scratch call is the library's call with
// only the function replaced by its copy: a change to a call in
// internal/sqlcall that the replacement no longer finds fails here.
func TestScratchCalls(t *testing.T) {
	t.Parallel()
	r := &run{schema: "lease_bench_x"}
	tests := []struct {
		got, call, fn, as string
	}{
		{scratchAcquireSQL(r), sqlcall.Acquire, "lease.acquire(", `"lease_bench_x"."acquire"(`},
		{scratchRenewSQL(r), sqlcall.Renew, "lease.renew(", `"lease_bench_x"."renew"(`},
		{r.onScratch(sqlcall.Acquire, "acquire", "acquire_ev"), sqlcall.Acquire, "lease.acquire(", `"lease_bench_x"."acquire_ev"(`},
	}
	for _, tt := range tests {
		if want := strings.Replace(tt.call, tt.fn, tt.as, 1); tt.got != want || tt.got == tt.call {
			t.Errorf("scratch call = %q, want %q (the library's %q on the copy)", tt.got, want, tt.call)
		}
	}
}
