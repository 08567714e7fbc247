package data_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSQLStatesAreReadInTranslate: within this package only translate.go
// reads the server's error (pgerr, SQLSTATE codes): every other file asks
// it (translate, queueError, isSerializationFailure ...), so that one file
// says what every code means.
func TestSQLStatesAreReadInTranslate(t *testing.T) {
	t.Parallel()
	reads := regexp.MustCompile(`\bpgerr\.|\bsqlstate\(|\.Code\b`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "translate.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if code, _, _ := strings.Cut(line, "//"); reads.MatchString(code) {
				t.Errorf("%s:%d reads the server's error itself: %s (translate it in translate.go)", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
