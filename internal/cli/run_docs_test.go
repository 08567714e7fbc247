package cli_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRunManualCoversEveryFlag: docs/run.md ("leasetop run in full") has a
// row in its flag table for every flag `leasetop run -h` lists, and run -h
// says which variables --pass-db-env passes on, LEASETOP_LISTEN_DSN among
// them.
func TestRunManualCoversEveryFlag(t *testing.T) {
	t.Parallel()
	out, errOut, code := leasetop(context.Background(), "postgres://127.0.0.1:1/none", "run", "-h")
	if code != 0 || errOut != "" {
		t.Fatalf("run -h: code %d, stderr %q", code, errOut)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(out, -1)
	if len(flags) < 10 {
		t.Fatalf("run -h lists %d flags, want the whole set:\n%s", len(flags), out)
	}
	b, err := os.ReadFile("../../docs/run.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string // the flag table's rows
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `--") {
			rows = append(rows, line)
		}
	}
	for _, f := range flags {
		name := "`--" + f[1] + "`"
		found := false
		for _, r := range rows {
			cell, _, _ := strings.Cut(strings.TrimPrefix(r, "| "), " |")
			if strings.Contains(cell, name) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/run.md has no row for %s in its flag table", name)
		}
	}
	if !strings.Contains(out, "LEASETOP_LISTEN_DSN") || !strings.Contains(out, "pass-db-env") {
		t.Errorf("run -h does not say that --pass-db-env passes LEASETOP_LISTEN_DSN:\n%s", out)
	}
}
