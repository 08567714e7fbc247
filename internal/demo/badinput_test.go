package demo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestBadInputGetsOneLine: a mistake in the demo's or a device's flags, or a
// database the demo cannot use, is one line on stderr with the documented
// exit code, before anything is started or written.
func TestBadInputGetsOneLine(t *testing.T) {
	t.Parallel()
	empty := pgtest.NewEmpty(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"argument", []string{"demo", "extra"}, 2, "takes no arguments"},
		{"monitor without a terminal", []string{"demo"}, 2, "needs a terminal"},
		{"ttl too short", []string{"demo", "--ttl", "10ms"}, 2, "ttl must be"},
		{"too many accounts", []string{"demo", "--accounts", "99"}, 2, "accounts must be"},
		// A 0 is refused, not replaced by the default (the demo would go on to
		// the database, which has no lease schema: exit 6).
		{"no accounts", []string{"demo", "--headless", "--accounts", "0", "--dsn", empty.URL}, 2, "demo: accounts must be 1 to 20, got 0 (see leasetop demo -h)"},
		{"no sessions", []string{"demo", "--headless", "--sessions", "0", "--dsn", empty.URL}, 2, "demo: sessions must be 1 to 10, got 0 (see leasetop demo -h)"},
		{"no ttl", []string{"demo", "--headless", "--ttl", "0s", "--dsn", empty.URL}, 2, "demo: ttl must be 1s to 1m0s, got 0s (see leasetop demo -h)"},
		{"no devices", []string{"demo", "--devices", " , "}, 2, "at least one device"},
		{"device named twice", []string{"demo", "--devices", "phone,phone"}, 2, "given twice"},
		{"unknown strategy", []string{"demo", "--headless", "--strategy", "refuse,\x1b[31mnuke", "--dsn", empty.URL}, 2, `strategy "\x1b[31mnuke" is not one of refuse,wait,preempt,join,queue`},
		{"strategy named twice", []string{"demo", "--strategy", "join,join"}, 2, `strategy "join" is given twice`},
		{"device with an unknown strategy", []string{"device", "--name", "x", "--account", "acme", "--sessions", "chat-1", "--strategy", "steal", "--dsn", empty.URL}, 2, `strategy "steal" is not one of`},
		{"bad flag", []string{"demo", "--frobnicate"}, 2, "flag provided but not defined"},
		{"unreachable database", []string{"demo", "--headless", "--dsn", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=2"}, 1, "cannot connect to 127.0.0.1:1/db"},
		{"database without the lease schema", []string{"demo", "--headless", "--dsn", empty.URL}, 6, "run leasetop migrate"},
		{"device without a name", []string{"device", "--account", "acme", "--sessions", "chat-1", "--dsn", empty.URL}, 2, "--name must not be empty"},
		{"device with a control character", []string{"device", "--name", "x", "--account", "ac\x1bme", "--sessions", "chat-1", "--dsn", empty.URL}, 2, "control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startLeasetop(t, tt.args...)
			code := p.wait(30 * time.Second)
			errOut := withoutDSNWarning(p.stderr.String())
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", errOut, tt.want)
			}
			if strings.Contains(errOut, "\x1b") || strings.Contains(errOut+p.stdout(), "hunter2") {
				t.Errorf("output carries an escape or the password: %q", errOut)
			}
		})
	}
	var schemas int
	if err := empty.Pool(t).QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname IN ('leasetop_demo', 'lease')`).Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Errorf("the refused demo created %d schemas in the database; want nothing written", schemas)
	}
}
