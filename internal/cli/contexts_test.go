package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const contextsFile = `# three regions
[keys]
pause = "p"

[contexts.eu]
dsn = "postgres://monitor@eu.db.internal/app"
listen_dsn = "postgres://monitor@eu-primary.db.internal/app"
mode = "protected"
color = "#5fafff"

[contexts.us]
dsn = "postgres://monitor@us.db.internal/app"
mode = "read-only"
color = "208"

[contexts.staging]
dsn = "host=staging.db.internal dbname=app user=monitor"
`

// writeFile writes text to a config file of the test's own.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// resolveArgs parses args as a command with --context, --dsn and
// --listen-dsn does, and resolves the contexts.
func resolveArgs(t *testing.T, home string, args ...string) ([]dbContext, string, error) {
	t.Helper()
	var stderr bytes.Buffer
	env := Env{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return home
		}
		return ""
	}, Stdout: &bytes.Buffer{}, Stderr: &stderr}
	fs := newFlags(env, "ls", "ls")
	dsnFlag(fs)
	addListenFlags(fs)
	cf := addContextFlags(fs, nil)
	if err := parseFlags(fs, args); err != nil {
		return nil, stderr.String(), err
	}
	got, err := cf.resolve(env)
	return got, stderr.String(), err
}

func TestContextsFromTheConfigFile(t *testing.T) {
	t.Parallel()
	p := writeFile(t, contextsFile)
	got, _, err := resolveArgs(t, "", "--config", p, "--context", "all")
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	want := []dbContext{
		{name: "eu", dsn: "postgres://monitor@eu.db.internal/app", listenDSN: "postgres://monitor@eu-primary.db.internal/app", mode: modeProtected, color: "#5fafff"},
		{name: "us", dsn: "postgres://monitor@us.db.internal/app", mode: modeReadOnly, color: "208"},
		{name: "staging", dsn: "host=staging.db.internal dbname=app user=monitor"},
	}
	if len(got) != len(want) {
		t.Fatalf("--context all = %+v, want %+v (the file's order)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("context %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestContextSelection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "leasetop"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "leasetop", "config.toml"), []byte(contextsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		names string // the contexts, in order
		warn  string // on stderr
	}{
		{"none", nil, "", ""},
		{"one", []string{"--context", "us"}, "us", ""},
		{"repeated", []string{"--context", "us", "--context", "eu"}, "us,eu", ""},
		{"a comma list", []string{"--context", "staging,eu"}, "staging,eu", ""},
		{"inline beside named", []string{"--context", "eu", "--context", "ap=postgres://monitor@ap.db.internal/app"}, "eu,ap", ""},
		{"inline with a password warns", []string{"--context", "ap=postgres://monitor:pw@ap.db.internal/app"}, "ap", "--context carries a password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stderr, err := resolveArgs(t, dir, tt.args...)
			if err != nil {
				t.Fatalf("resolve(%q): %v", tt.args, err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.name)
			}
			if g := strings.Join(names, ","); g != tt.names {
				t.Errorf("resolve(%q) = %q, want %q", tt.args, g, tt.names)
			}
			if !strings.Contains(stderr, tt.warn) || (tt.warn == "" && stderr != "") {
				t.Errorf("stderr = %q, want %q", stderr, tt.warn)
			}
		})
	}
}

func TestContextBadInput(t *testing.T) {
	t.Parallel()
	good := writeFile(t, contextsFile)
	tests := []struct {
		name string
		file string // the config file's text ("" for the good one)
		args []string
		want string
	}{
		{"unknown name", "", []string{"--context", "ap"}, `--context "ap": no such context in the config file (it has eu, us, staging)`},
		{"twice", "", []string{"--context", "eu", "--context", "eu"}, `"eu" is given twice`},
		{"all and one", "", []string{"--context", "all", "--context", "us"}, `"us" is given twice`},
		{"with --dsn", "", []string{"--context", "eu", "--dsn", "postgres://x/y"}, "--context and --dsn cannot go together"},
		{"with --listen-dsn", "", []string{"--context", "eu", "--listen-dsn", "postgres://x/y"}, "--context and --listen-dsn cannot go together"},
		{"inline without a DSN", "", []string{"--context", "ap="}, "the DSN is empty"},
		{"inline bad name", "", []string{"--context", "a p=postgres://x/y"}, `context name "a p"`},
		{"inline named all", "", []string{"--context", "all=postgres://x/y"}, `context name "all" is taken`},
		{"inline bad DSN", "", []string{"--context", "ap=postgres://x:notaport/y"}, "--context ap: "},
		{"empty in a list", "", []string{"--context", "eu,,us"}, "--context: empty value"},
		{"no table", "[keys]\npause = \"p\"\n", []string{"--context", "all"}, "has no [contexts.NAME] table"},
		{"bad mode", "[contexts.eu]\ndsn = \"postgres://x/y\"\nmode = \"readonly\"\n", []string{"--context", "eu"}, `:3: mode "readonly": want read-only, protected or read-write`},
		{"bad colour", "[contexts.eu]\ndsn = \"postgres://x/y\"\n\ncolor = \"blue\"\n", []string{"--context", "eu"}, `:4: color "blue"`},
		{"no dsn", "[contexts.eu]\nmode = \"protected\"\n", []string{"--context", "eu"}, `:1: [contexts.eu]: dsn is missing`},
		{"bad dsn", "\n[contexts.eu]\ndsn = \"postgres://x:notaport/y\"\n", []string{"--context", "eu"}, `:2: [contexts.eu]: dsn: `},
		{"unknown setting", "[contexts.eu]\ndsn = \"postgres://x/y\"\nreadonly = true\n", []string{"--context", "eu"}, `:1: unknown setting "readonly" in [contexts.eu]`},
		{"bad table name", "[contexts.\"e u\"]\ndsn = \"postgres://x/y\"\n", []string{"--context", "all"}, `context name "e u"`},
		{"syntax", "[contexts.eu\n", []string{"--context", "eu"}, `.toml:2: expected`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			if tt.file != "" {
				p = writeFile(t, tt.file)
			}
			_, _, err := resolveArgs(t, "", append([]string{"--config", p}, tt.args...)...)
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != ExitUsage {
				t.Fatalf("resolve(%q) = %v, want a usage error containing %q", tt.args, err, tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "pw@") {
				t.Errorf("resolve(%q) error = %q, want one line containing %q", tt.args, msg, tt.want)
			}
		})
	}
}

func TestTooManyContexts(t *testing.T) {
	t.Parallel()
	var args []string
	for i := range maxContexts + 1 {
		args = append(args, "--context", "c"+string(rune('a'+i))+"=postgres://db/app")
	}
	_, _, err := resolveArgs(t, "", args...)
	if err == nil || !strings.Contains(err.Error(), "at most 16") {
		t.Errorf("resolve(%d contexts) = %v, want an error saying at most %d", maxContexts+1, err, maxContexts)
	}
}
