package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// runBench runs `leasetop bench args...` with an empty environment.
func runBench(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(context.Background(), cli.Env{
		Args: append([]string{"bench"}, args...), Getenv: func(string) string { return "" },
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
	})
	code = cli.Report(&errOut, err)
	return out.String(), errOut.String(), code
}

func TestCommandJSON(t *testing.T) {
	db := pgtest.New(t)
	stdout, stderr, code := runBench(t, "--dsn", db.URL, "--clients", "2", "--keys", "4",
		"--duration", "100ms", "--warmup", "0s", "--only", "select1,upsert,acquire", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Name)
		if r.Ops == 0 || r.Error != "" {
			t.Errorf("%s: ops %d, error %q; want ops > 0 and no error", r.Name, r.Ops, r.Error)
		}
	}
	if got, want := strings.Join(names, ","), "select1,upsert,acquire"; got != want {
		t.Errorf("results %s, want %s", got, want)
	}
	if len(rep.Ratios) == 0 || rep.Ratios[0].Name != "acquire p50 / plain UPSERT p50" || rep.Ratios[0].Met == nil {
		t.Errorf("first ratio = %+v, want the acquire target with a verdict", rep.Ratios)
	}
	if rep.Machine.PostgresVersion == "" || rep.Machine.Fsync == "" || rep.Machine.Cores == 0 {
		t.Errorf("machine = %+v, want cores, PostgreSQL version and fsync", rep.Machine)
	}
	if rep.Settings.Clients != 2 || rep.Settings.Keys != 4 {
		t.Errorf("settings = %+v, want 2 clients, 4 keys", rep.Settings)
	}
	assertCleanedUp(t, db.Conn(t))
}

// TestCommandEmbedded runs bench without --dsn: it must start its own server
// with fsync on and say so.
func TestCommandEmbedded(t *testing.T) {
	stdout, stderr, code := runBench(t, "--clients", "1", "--keys", "1", "--duration", "50ms", "--warmup", "0s", "--only", "select1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"embedded throwaway server", "fsync=on", "synchronous_commit=on", "select1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCommandBadInput(t *testing.T) {
	schemaless := pgtest.NewEmpty(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero clients", []string{"--clients", "0"}, cli.ExitUsage, "--clients must be at least 1"},
		{"too many clients", []string{"--clients", "100000"}, cli.ExitUsage, "--clients must be between 1 and 256"},
		{"fewer keys than clients", []string{"--clients", "4", "--keys", "2"}, cli.ExitUsage, "--keys must be between"},
		{"negative duration", []string{"--duration", "-1s"}, cli.ExitUsage, "--duration must be positive"},
		{"unknown workload", []string{"--only", "acquire,\x1b[31mevil"}, cli.ExitUsage, `unknown workload "\x1b[31mevil"`},
		{"argument", []string{"now"}, cli.ExitUsage, `bench takes no arguments, got "now"`},
		{"bad flag", []string{"--nope"}, cli.ExitUsage, "flag provided but not defined"},
		{"bad url", []string{"--dsn", "postgres://u:hunter2@[::1"}, cli.ExitUsage, "invalid database URL"},
		{"no schema", []string{"--dsn", schemaless.URL, "--only", "select1"}, cli.ExitSchema, "leasetop migrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBench(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.want)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("stderr shows the password: %q", stderr)
			}
			if strings.Contains(stderr, "\x1b") {
				t.Errorf("stderr carries a raw escape: %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}
