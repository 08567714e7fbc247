package main

import (
	"os"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/data"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestCLIDocQuotesTheSchemaLines: docs/cli.md quotes the line each command
// prints for a database whose lease schema is missing, older or newer
// (TestSchemaErrorsGetOneLine checks that every command prints it, with
// exit 6); the quotes must be those lines, at this leasetop's version.
func TestCLIDocQuotesTheSchemaLines(t *testing.T) {
	b, err := os.ReadFile("docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	v := leasesql.Version
	for _, have := range []int{0, v - 1, v + 1} {
		line := (&data.SchemaError{Have: have, Want: v}).Error()
		if !strings.Contains(doc, "`"+line+"`") {
			t.Errorf("docs/cli.md does not quote the line for a schema at version %d: `%s`", have, line)
		}
	}
}
