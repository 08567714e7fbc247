package lease_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// docs/run.md's example, and the README's and the package overview's
// excerpts of it, are the compiled package example (example_readme_test.go,
// run with its Output checked): this keeps docs/run.md's identical to it
// and the excerpts verbatim parts of it, so the shown code cannot rot.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	file := readFile(t, "example_readme_test.go")
	start := strings.Index(file, "// reply writes the answer")
	if start < 0 {
		t.Fatal("example_readme_test.go: no reply function")
	}
	example := file[start:]

	const runDoc = "../docs/run.md"
	block := goBlock(t, readFile(t, runDoc), "## The Go library")
	code, imports := block, ""
	if i := strings.Index(block, "\n)\n\n"); strings.HasPrefix(block, "import (") && i >= 0 {
		code, imports = block[i+len("\n)\n\n"):], block[:i]
	}
	if code != example {
		t.Errorf("%s's example differs from lease/example_readme_test.go from %q on:\n%s",
			runDoc, "// reply writes the answer", firstDifference(code, example))
	}
	for _, imp := range strings.Split(imports, "\n")[min(1, len(imports)):] {
		if imp = strings.TrimSpace(imp); imp != "" && !strings.Contains(file, "\t"+imp+"\n") {
			t.Errorf("%s imports %s, which the example does not", runDoc, imp)
		}
	}

	excerpt := docExcerpt(t, readFile(t, "doc.go"), "// # Authorize, then compete")
	if !strings.Contains(example, excerpt) {
		t.Errorf("doc.go's example is not an excerpt of reply in example_readme_test.go:\n%s", excerpt)
	}

	// The README shows reply's body from its authorization to the end of
	// Do, as a reader writes it: without the function's indentation.
	readme := indentBody(goBlock(t, readFile(t, "../README.md"), "## Owning an execution in Go"))
	if !strings.Contains(example, readme) {
		t.Errorf("README.md's example is not an excerpt of reply in example_readme_test.go (indented one tab):\n%s", readme)
	}
	if !strings.Contains(readme, excerpt) {
		t.Errorf("README.md's example leaves out part of doc.go's (authorize, then Do):\n%s", excerpt)
	}
}

// indentBody indents every non-empty line of code by one tab, as the body
// of a function.
func indentBody(code string) string {
	var b strings.Builder
	for line := range strings.Lines(code) {
		if line != "\n" {
			b.WriteString("\t")
		}
		b.WriteString(line)
	}
	return b.String()
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
