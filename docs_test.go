package main

import (
	"os"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/data"
	leasesql "github.com/leasetop/leasetop/sql"
)

// TestREADMEQuotesTheSchemaLines: the README quotes the line each command
// prints for a database whose lease schema is missing, older or newer
// (TestSchemaErrorsGetOneLine checks that every command prints it, with
// exit 6); the quotes must be those lines, at this leasetop's version.
func TestREADMEQuotesTheSchemaLines(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	v := leasesql.Version
	for _, have := range []int{0, v - 1, v + 1} {
		line := (&data.SchemaError{Have: have, Want: v}).Error()
		if !strings.Contains(readme, "`"+line+"`") {
			t.Errorf("README does not quote the line for a schema at version %d: `%s`", have, line)
		}
	}
}
