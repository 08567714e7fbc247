package pgerr_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerErrorsAreReadAtTheBoundary: the driver's server error is looked
// for here and read at data's boundary (internal/data/translate.go), so no other
// non-test file of the module may name pgconn.PgError: one that did would
// be a second translation that drifts from the first.
func TestServerErrorsAreReadAtTheBoundary(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := map[string]bool{
		filepath.Join("internal", "pgerr", "pgerr.go"):    true,
		filepath.Join("internal", "data", "translate.go"): true,
	}
	var leaks []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "pgconn.PgError") && !allowed[rel] {
			leaks = append(leaks, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) > 0 {
		t.Errorf("non-test files naming pgconn.PgError outside internal/pgerr and internal/data/translate.go: %v; use pgerr.Server or pgerr.Code (or data.Translate, data.NotApplied above data)", leaks)
	}
}
