package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// contextConfig writes a config file naming each database of dsns (name,
// then its DSN, then more pairs) as a context, and returns its path.
func contextConfig(t *testing.T, extra string, dsns ...string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(dsns); i += 2 {
		fmt.Fprintf(&b, "[contexts.%s]\ndsn = %q\n\n", dsns[i], dsns[i+1])
	}
	b.WriteString(extra)
	return configFile(t, b.String())
}

// configFile writes text to a config file of the test's own and returns its
// path.
func configFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// lsContextsJSON is ls --context --json as a script reads it.
type lsContextsJSON struct {
	Contexts []struct {
		Context    string     `json:"context"`
		ServerTime *time.Time `json:"server_time"`
		Error      *string    `json:"error"`
	} `json:"contexts"`
	Leases []struct {
		Context          string    `json:"context"`
		AccountID        string    `json:"account_id"`
		SessionID        string    `json:"session_id"`
		RunID            uuid.UUID `json:"run_id"`
		RemainingSeconds float64   `json:"remaining_seconds"`
	} `json:"leases"`
	Queues []struct {
		Context string `json:"context"`
	} `json:"queues"`
}

// Two PostgreSQL servers, one table: ls --context all --json lists the
// leases of both, each tagged with its context, the same key in both as two
// leases; the text has a CONTEXT column.
func TestLsAcrossContexts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eu := pgtest.New(t)
	_, us := pgtest.OtherServer(t, "us_app")
	euRun := acquire(t, eu.Conn(t), "acme", "chat-1", "1 min", "eu worker")
	usRun := acquire(t, us.Conn(t), "acme", "chat-1", "1 min", "us worker")
	usOnly := acquire(t, us.Conn(t), "globex", "chat-9", "1 min", "us worker")
	cfg := contextConfig(t, "", "eu", eu.URL, "us", us.URL)

	out, errOut, code := leasetop(ctx, "", "ls", "--config", cfg, "--context", "all", "--json")
	if code != 0 {
		t.Fatalf("ls --context all --json: exit %d, stderr %q", code, errOut)
	}
	var got lsContextsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Contexts) != 2 || got.Contexts[0].Context != "eu" || got.Contexts[1].Context != "us" {
		t.Fatalf("contexts = %+v, want eu then us", got.Contexts)
	}
	for _, c := range got.Contexts {
		if c.ServerTime == nil || c.Error != nil {
			t.Errorf("context %s: server_time %v, error %v; want a time and no error", c.Context, c.ServerTime, c.Error)
		}
	}
	var leases []string
	for _, l := range got.Leases {
		leases = append(leases, fmt.Sprintf("%s %s/%s %s", l.Context, l.AccountID, l.SessionID, l.RunID))
		if l.RemainingSeconds <= 0 {
			t.Errorf("lease %s/%s in %s: remaining_seconds %v, want > 0", l.AccountID, l.SessionID, l.Context, l.RemainingSeconds)
		}
	}
	want := []string{
		fmt.Sprintf("eu acme/chat-1 %s", euRun),
		fmt.Sprintf("us acme/chat-1 %s", usRun),
		fmt.Sprintf("us globex/chat-9 %s", usOnly),
	}
	if g, w := strings.Join(leases, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("leases:\n%s\nwant:\n%s", g, w)
	}

	out, errOut, code = leasetop(ctx, "", "ls", "--config", cfg, "--context", "us,eu")
	if code != 0 {
		t.Fatalf("ls --context us,eu: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "CONTEXT  ACCOUNT") ||
		!strings.HasPrefix(lines[1], "us ") || !strings.HasPrefix(lines[3], "eu ") || !strings.Contains(lines[3], euRun.String()) {
		t.Errorf("ls --context us,eu printed, want a CONTEXT column and us's rows before eu's:\n%s", out)
	}
}

// A context that cannot be reached is one line on stderr and an error in
// the JSON; the others are listed all the same, and ls exits 1.
func TestLsWithAContextDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eu := pgtest.New(t)
	run := acquire(t, eu.Conn(t), "acme", "chat-1", "1 min", "eu worker")
	cfg := contextConfig(t, "", "eu", eu.URL)

	out, errOut, code := leasetop(ctx, "", "ls", "--config", cfg, "--context", "eu", "--context", "down=postgres://u:secret@127.0.0.1:1/app", "--json")
	if code != 1 {
		t.Fatalf("ls with a context down: exit %d, want 1 (stderr %q)", code, errOut)
	}
	if !strings.Contains(errOut, "leasetop: context down: cannot connect to 127.0.0.1:1/app as u:") ||
		!strings.Contains(errOut, "(check --context down=…)") || strings.Contains(errOut, "secret") {
		t.Errorf("stderr = %q, want one line naming the context down and where it is defined, never the password", errOut)
	}
	var got lsContextsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Contexts) != 2 || got.Contexts[1].Error == nil || got.Contexts[1].ServerTime != nil || got.Contexts[0].Error != nil {
		t.Errorf("contexts = %+v, want eu read and down with its error", got.Contexts)
	}
	if len(got.Leases) != 1 || got.Leases[0].Context != "eu" || got.Leases[0].RunID != run {
		t.Errorf("leases = %+v, want eu's one lease", got.Leases)
	}
}
