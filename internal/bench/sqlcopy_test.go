package bench

import (
	"strings"
	"testing"
	"time"
)

func TestScratchDDL(t *testing.T) {
	stmts, err := scratchDDL("lease_bench_x", "lease_bench_x")
	if err != nil {
		t.Fatalf("scratchDDL: %v", err)
	}
	all := strings.Join(stmts, "\n")
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
		{"never the real channel", `'lease_events'`, false},
	}
	for _, tt := range tests {
		if got := strings.Contains(all, tt.contains); got != tt.want {
			t.Errorf("%s: contains %q = %t, want %t", tt.name, tt.contains, got, tt.want)
		}
	}
}

func TestExtractFunctionMissing(t *testing.T) {
	if _, err := extractFunction("CREATE TABLE x ();", "acquire"); err == nil {
		t.Error("extractFunction of a missing function: err = nil, want an error")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"defaults", Config{}, ""},
		{"too many clients", Config{Clients: 1000}, "--clients"},
		{"negative clients", Config{Clients: -1}, "--clients"},
		{"fewer keys than clients", Config{Clients: 8, Keys: 4}, "--keys"},
		{"tiny duration", Config{Duration: time.Microsecond}, "--duration"},
		{"unknown workload", Config{Only: []string{"nope"}}, `unknown workload "nope"`},
		{"group", Config{Only: []string{"handoff"}}, ""},
		{"name", Config{Only: []string{"renew-notify", "select1"}}, ""},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestSelectGroup(t *testing.T) {
	ws, err := selectWorkloads([]string{"handoff"})
	if err != nil {
		t.Fatalf("selectWorkloads(handoff): %v", err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.name)
	}
	if want := "handoff-notify,handoff-poll-100ms,handoff-poll-1s"; strings.Join(got, ",") != want {
		t.Errorf("selectWorkloads(handoff) = %v, want %s", got, want)
	}
}
