package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocsLinksResolve: every relative link in README.md and docs/*.md
// names a file of the repository, and a link into a Markdown file's
// section names a heading that file has (as GitHub makes a heading's
// anchor). Links inside code are not links and are not checked.
func TestDocsLinksResolve(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // a Markdown file's anchors, by path
	for _, doc := range append([]string{"README.md"}, docs...) {
		links := markdownLinks(t, doc)
		if len(links) == 0 && doc == "README.md" {
			t.Errorf("%s: found no links, want its links into docs/", doc)
		}
		for _, link := range links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := doc
			if target != "" {
				path = filepath.Join(filepath.Dir(doc), target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link (%s): no file %s", doc, link, path)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if anchors[path] == nil {
				anchors[path] = headingAnchors(t, path)
			}
			if !anchors[path][anchor] {
				t.Errorf("%s: link (%s): %s has no heading with anchor #%s", doc, link, path, anchor)
			}
		}
	}
}

// markdownLinks returns the targets of the inline links of a Markdown
// file, [text](target), outside fenced code blocks and code spans.
func markdownLinks(t *testing.T, path string) []string {
	t.Helper()
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	var out []string
	for _, line := range proseLines(t, path) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// proseLines returns a Markdown file's lines outside fenced code blocks,
// with code spans removed.
func proseLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`[^`]*`")
	var out []string
	inBlock := false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			out = append(out, span.ReplaceAllString(line, ""))
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: the heading's text in lower case, letters, digits, "_" and "-"
// kept, spaces made "-", everything else dropped; a repeated anchor gets
// "-1", "-2", ...
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		text, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "#")
		if inBlock || !ok {
			continue
		}
		text = strings.TrimSpace(strings.TrimLeft(text, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '_', r == '-':
				a.WriteRune(r)
			case r == ' ':
				a.WriteRune('-')
			}
		}
		anchor := a.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor += "-" + strconv.Itoa(n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors
}
