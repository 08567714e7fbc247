package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// completionDB is a database with leases to complete, and the URL of a
// lease_reader login on it (completion needs no more).
type completionDB struct {
	reader string
	// shellID is a valid session id of acme that is shell syntax: a
	// completion that lands on the command line unquoted would run it.
	shellID string
	marker  string // the file shellID would create
	bin     string // the leasetop binary
}

func newCompletionDB(t *testing.T) completionDB {
	t.Helper()
	db := pgtest.New(t)
	conn := db.Conn(t)
	ctx := context.Background()
	marker := filepath.Join(t.TempDir(), "pwned")
	c := completionDB{reader: db.ReaderURL(t), shellID: "x$(touch " + marker + ")", marker: marker, bin: builtBinary(t)}
	for _, k := range [][2]string{{"acme", "chat-1"}, {"acme", "chat-2"}, {"acme", c.shellID}, {"globex", "chat-9"}, {"globex", "unique-session-7"}} {
		if _, err := conn.Exec(ctx, `SELECT lease.acquire($1, $2, $3, '1 hour', 'test')`, k[0], k[1], uuid.New()); err != nil {
			t.Fatal(err)
		}
	}
	// A row the schema would refuse (a superuser's mistake): its ids must
	// never reach the terminal.
	if _, err := conn.Exec(ctx, `ALTER DOMAIN lease.id_text DROP CONSTRAINT id_text_check`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lease.session_lease VALUES
		($1, $2, gen_random_uuid(), 'h', 999, clock_timestamp(), clock_timestamp(), clock_timestamp() + interval '1 hour')`,
		"evil\x1b[2J", "chat-\x1b]0;pwned\x07"); err != nil {
		t.Fatal(err)
	}
	return c
}

// shellEnv is the environment of a shell that completes leasetop: the
// binary on PATH, DATABASE_URL the reader's.
func shellEnv(c completionDB) []string {
	return []string{"PATH=" + filepath.Dir(c.bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "DATABASE_URL=" + c.reader}
}

// TestCompletionBash runs the generated script in a real bash: each case
// sets the line, the words and the cursor as bash does for a tab (bash
// splits a word at = and :, the line does not) and calls the completion
// function. Commands, flags, fixed values and the database's account and
// session ids come back, the session ids of the account on the line only;
// an id that is shell syntax comes back quoted, so that the shell reads it
// as the literal id and runs nothing; an id with escape sequences is not
// offered at all.
func TestCompletionBash(t *testing.T) {
	c := newCompletionDB(t)
	tests := []struct {
		line  string
		words []string
		want  []string
	}{
		{"leasetop rel", []string{"leasetop", "rel"}, []string{"release"}},
		{"leasetop ver", []string{"leasetop", "ver"}, []string{"version"}},
		{"leasetop completion ", []string{"leasetop", "completion", ""}, []string{"bash", "zsh", "fish"}},
		{"leasetop release --acc", []string{"leasetop", "release", "--acc"}, []string{"--account"}},
		{"leasetop release --account a", []string{"leasetop", "release", "--account", "a"}, []string{"acme"}},
		{"leasetop release --account acme --session chat-", []string{"leasetop", "release", "--account", "acme", "--session", "chat-"}, []string{"chat-1", "chat-2"}},
		{"leasetop events --account acme,g", []string{"leasetop", "events", "--account", "acme,g"}, []string{"acme,globex"}},
		{"leasetop ls --session=uni", []string{"leasetop", "ls", "--session", "=", "uni"}, []string{"unique-session-7"}},
		{"leasetop run --account globex --session ", []string{"leasetop", "run", "--account", "globex", "--session", ""}, []string{"chat-9", "unique-session-7"}},
		{"leasetop events --kind taken", []string{"leasetop", "events", "--kind", "taken"}, []string{"taken_over"}},
		{"leasetop run --on-busy pre", []string{"leasetop", "run", "--on-busy", "pre"}, []string{"preempt"}},
		{"leasetop ls --account ev", []string{"leasetop", "ls", "--account", "ev"}, nil},
		{"leasetop release --account acme --session x", []string{"leasetop", "release", "--account", "acme", "--session", "x"}, []string{c.shellID}},
	}
	var script strings.Builder
	script.WriteString(`source <(leasetop completion bash) || exit 1
comp() {
    COMP_LINE=$1; COMP_POINT=${#COMP_LINE}; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=()
    _leasetop
    local w
    for w in "${COMPREPLY[@]}"; do
        eval "set -- $w" # what the shell reads in the completed word
        printf '%s\t%s\n' "$w" "$1"
    done
    echo '--'
}
`)
	for _, tt := range tests {
		script.WriteString("comp " + shellQuote(tt.line))
		for _, w := range tt.words {
			script.WriteString(" " + shellQuote(w))
		}
		script.WriteString("\n")
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script.String())
	cmd.Env = append(os.Environ(), shellEnv(c)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%d completions in %s", len(tests), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	answers := strings.Split(strings.TrimSuffix(string(out), "--\n"), "--\n")
	if len(answers) != len(tests) {
		t.Fatalf("bash printed %d answers for %d cases:\n%s", len(answers), len(tests), out)
	}
	for i, tt := range tests {
		var got, inserted []string
		for _, l := range strings.Split(strings.TrimSuffix(answers[i], "\n"), "\n") {
			if w, read, ok := strings.Cut(l, "\t"); ok {
				inserted, got = append(inserted, w), append(got, read)
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q: completions %q (as inserted %q), want %q", tt.line, got, inserted, tt.want)
		}
	}
	if _, err := os.Stat(c.marker); err == nil {
		t.Errorf("completing the id %q ran it", c.shellID)
	}
}

// shellQuote quotes s for a POSIX shell: one literal word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestCompletionTab types into real interactive shells (bash, zsh, fish)
// in tmux, each with the script leasetop completion printed for it, and
// presses tab: the session id comes from the database and lands on the
// line; an id that is shell syntax lands quoted (printf then prints it
// literally, and nothing ran).
func TestCompletionTab(t *testing.T) {
	c := newCompletionDB(t)
	shells := []struct {
		name, command, setup string
	}{
		{"bash", "bash --norc --noprofile", `PS1='$ '; source <(leasetop completion bash)`},
		{"zsh", "zsh -f", `PS1='$ '; autoload -U compinit; compinit -u; source <(leasetop completion zsh)`},
		{"fish", "fish --no-config", `function fish_prompt; echo '$ '; end; leasetop completion fish | source`},
	}
	for _, sh := range shells {
		t.Run(sh.name, func(t *testing.T) {
			if _, err := exec.LookPath(sh.name); err != nil {
				t.Fatalf("%s is not installed (.ci/run installs it): %v", sh.name, err)
			}
			tm := proctest.StartTmux(t, 200, 20, append(shellEnv(c), "HOME="+t.TempDir()), sh.command)
			tm.Type(sh.setup)
			tm.Keys("Enter")
			tm.Type("clear")
			tm.Keys("Enter")
			tm.WaitFor("a prompt", 20*time.Second, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "$") })

			tm.Type("leasetop ls --session uni")
			tm.Keys("Tab")
			tm.WaitFor("the session id completed from the database", 20*time.Second, func(s string) bool {
				return strings.Contains(s, "leasetop ls --session unique-session-7")
			})
			tm.Keys("C-u")
			tm.Type("leasetop release --account acme --session x")
			tm.Keys("Tab")
			tm.WaitFor("the shell-syntax id completed", 20*time.Second, func(s string) bool {
				return strings.Contains(s, "touch")
			})
			tm.Keys("C-a")
			tm.Type(`printf 'got:%s\n' `)
			tm.Keys("Enter")
			screen := tm.WaitFor("printf showing the id as one literal word", 20*time.Second, func(s string) bool {
				return strings.Contains(s, "got:"+c.shellID)
			})
			t.Logf("%s:\n%s", sh.name, strings.TrimSpace(screen))
			if _, err := os.Stat(c.marker); err == nil {
				t.Errorf("completing the id %q in %s ran it", c.shellID, sh.name)
			}
		})
	}
}
