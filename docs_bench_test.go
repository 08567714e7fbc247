package main

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/leasetop/leasetop/internal/bench"
)

// TestBenchmarksShowThePlots: docs/BENCHMARKS.md shows every figure bench
// --plot draws, from docs/bench/, and each file there is an SVG document
// (it parses as XML, its root is <svg>, it has text: titles and axes).
func TestBenchmarksShowThePlots(t *testing.T) {
	src, err := os.ReadFile("docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, m := range regexp.MustCompile(`!\[[^\]]+\]\(bench/([^)]+\.svg)\)`).FindAllStringSubmatch(string(src), -1) {
		shown = append(shown, m[1])
	}
	for _, name := range bench.FigureNames() {
		if !slices.Contains(shown, name) {
			t.Errorf("docs/BENCHMARKS.md does not show bench/%s", name)
		}
	}
	for _, name := range shown {
		f, err := os.Open(filepath.Join("docs", "bench", name))
		if err != nil {
			t.Errorf("docs/BENCHMARKS.md shows bench/%s: %v", name, err)
			continue
		}
		root, texts := "", 0
		dec := xml.NewDecoder(f)
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("docs/bench/%s is not XML: %v", name, err)
				break
			}
			if se, ok := tok.(xml.StartElement); ok {
				if root == "" {
					root = se.Name.Local
				}
				if se.Name.Local == "text" {
					texts++
				}
			}
		}
		f.Close()
		if root != "svg" || texts < 5 {
			t.Errorf("docs/bench/%s: root <%s>, %d text elements; want an <svg> with its titles and axes", name, root, texts)
		}
	}
}
