package pgtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// callName finds what may be a function call in SQL text: an identifier
// followed by "(". In Go source it also finds Go's own calls; a name that is
// no function of pg_catalog's is dropped where the catalog is read, so the
// superset costs only a few shadows more.
var callName = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// projectCallNames returns every name followed by "(" in the module's
// non-test Go files and its SQL files, lowercased and sorted: the functions
// the project's statements may call, whatever the statement's path through
// the code. The module's root is found above the working directory.
func projectCallNames() ([]string, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !(strings.HasSuffix(name, ".sql") || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range callName.FindAllStringSubmatch(string(text), -1) {
			seen[strings.ToLower(m[1])] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// moduleRoot is the nearest folder at or above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
