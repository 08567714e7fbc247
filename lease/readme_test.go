package lease_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The README's and docs/run.md's example, and the package overview's
// excerpt of it, are the compiled package example (example_readme_test.go,
// run with its Output checked): this keeps them identical, so the shown
// code cannot rot.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	file := readFile(t, "example_readme_test.go")
	start := strings.Index(file, "// reply writes the answer")
	if start < 0 {
		t.Fatal("example_readme_test.go: no reply function")
	}
	example := file[start:]

	for _, doc := range []struct{ path, section string }{
		{"../README.md", "## Owning an execution in Go"},
		{"../docs/run.md", "## The Go library"},
	} {
		block := goBlock(t, readFile(t, doc.path), doc.section)
		code, imports := block, ""
		if i := strings.Index(block, "\n)\n\n"); strings.HasPrefix(block, "import (") && i >= 0 {
			code, imports = block[i+len("\n)\n\n"):], block[:i]
		}
		if code != example {
			t.Errorf("%s's example differs from lease/example_readme_test.go from %q on:\n%s",
				doc.path, "// reply writes the answer", firstDifference(code, example))
		}
		for _, imp := range strings.Split(imports, "\n")[min(1, len(imports)):] {
			if imp = strings.TrimSpace(imp); imp != "" && !strings.Contains(file, "\t"+imp+"\n") {
				t.Errorf("%s imports %s, which the example does not", doc.path, imp)
			}
		}
	}

	excerpt := docExcerpt(t, readFile(t, "doc.go"), "// # Authorize, then compete")
	if !strings.Contains(example, excerpt) {
		t.Errorf("doc.go's example is not an excerpt of reply in example_readme_test.go:\n%s", excerpt)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goBlock returns the first ```go block after the line starting section.
func goBlock(t *testing.T, md, section string) string {
	t.Helper()
	i := strings.Index(md, "\n"+section)
	if i < 0 {
		t.Fatalf("no section %q", section)
	}
	rest := md[i:]
	open := strings.Index(rest, "\n```go\n")
	if open < 0 {
		t.Fatalf("section %q has no go block", section)
	}
	rest = rest[open+len("\n```go\n"):]
	end := strings.Index(rest, "```\n")
	if end < 0 {
		t.Fatalf("section %q: unterminated go block", section)
	}
	return rest[:end]
}

// docExcerpt returns the code block after the doc comment line heading,
// as the source it shows: one tab of function-body indentation per line.
func docExcerpt(t *testing.T, src, heading string) string {
	t.Helper()
	i := strings.Index(src, heading)
	if i < 0 {
		t.Fatalf("doc.go: no %q", heading)
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(src[i:], "\n") {
		switch {
		case strings.HasPrefix(line, "//\t"):
			in = true
			b.WriteString("\t" + strings.TrimPrefix(line, "//\t") + "\n")
		case line == "//" && in:
			b.WriteString("\n")
		case in:
			return strings.TrimRight(b.String(), "\n") + "\n"
		}
	}
	t.Fatalf("doc.go: no code block after %q", heading)
	return ""
}

// firstDifference shows where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  doc:     " + g[i] + "\n  example: " + w[i]
		}
	}
	return "one is longer than the other"
}
