package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestCLIDocQuotesTheSchemaLines: docs/cli.md quotes the line each command
// prints for a database whose lease schema is missing, older or newer
// (TestSchemaErrorsGetOneLine checks that every command prints it, with
// exit 6); the quotes must be those lines, at this leasetop's version
// (the one for a newer schema names the binary's version, which varies).
func TestCLIDocQuotesTheSchemaLines(t *testing.T) {
	b, err := os.ReadFile("docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	v := leasesql.Version
	for _, have := range []int{0, v - 1} {
		line := (&data.SchemaError{Have: have, Want: v}).Error()
		if !strings.Contains(doc, "`"+line+"`") {
			t.Errorf("docs/cli.md does not quote the line for a schema at version %d: `%s`", have, line)
		}
	}
	// A newer schema's line names this binary's version first (a build's).
	newer := fmt.Sprintf(" is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop (leasetop version --dsn URL compares them)`", v+1, v)
	if !strings.Contains(doc, "`this leasetop ") || !strings.Contains(doc, newer) {
		t.Errorf("docs/cli.md does not quote the line for a schema at version %d: `this leasetop VERSION%s", v+1, newer)
	}
}

// TestDocsListEveryCommand: README.md's command table and docs/cli.md's
// have a row for every command leasetop help lists, and no row for a
// command it does not list.
func TestDocsListEveryCommand(t *testing.T) {
	out, errOut, code := leasetop(t, nil, "help")
	if code != 0 {
		t.Fatalf("leasetop help: exit %d, stderr %q", code, errOut)
	}
	_, list, ok := strings.Cut(out, "\nCommands:\n")
	if !ok {
		t.Fatalf("leasetop help has no Commands: section:\n%s", out)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	commands := map[string]bool{}
	for line := range strings.Lines(list) {
		if f := strings.Fields(line); len(f) > 0 {
			commands[f[0]] = true
		}
	}
	if len(commands) < 10 {
		t.Fatalf("leasetop help lists %d commands, want them all:\n%s", len(commands), out)
	}
	name := regexp.MustCompile("`leasetop ([a-z]+)(?: [^`]*)?`") // a command, and maybe its arguments
	for _, doc := range []string{"README.md", "docs/cli.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]bool{} // the commands named in a row's first cell
		for line := range strings.Lines(string(b)) {
			if !strings.HasPrefix(line, "| `leasetop") {
				continue
			}
			first, _, _ := strings.Cut(line[1:], " |")
			for _, m := range name.FindAllStringSubmatch(first, -1) {
				rows[m[1]] = true
			}
		}
		for c := range commands {
			if !rows[c] {
				t.Errorf("%s has no row for leasetop %s, which leasetop help lists", doc, c)
			}
		}
		for c := range rows {
			if !commands[c] {
				t.Errorf("%s has a row for leasetop %s, which leasetop help does not list", doc, c)
			}
		}
	}
}
