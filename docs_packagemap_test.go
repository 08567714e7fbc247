package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDesignPackageMapMatchesGoList: docs/DESIGN.md's package map has a row
// for every package of the module and none for a package that is gone.
func TestDesignPackageMapMatchesGoList(t *testing.T) {
	src, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "## Package map\n")
	if !ok {
		t.Fatal("docs/DESIGN.md has no ## Package map")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var mapped []string
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			mapped = append(mapped, strings.TrimSuffix(m[1], "/"))
		}
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var listed []string
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, "github.com/leasetop/leasetop/")
		if !ok {
			rel = "main" // the module's root package
		}
		listed = append(listed, rel)
	}
	slices.Sort(mapped)
	slices.Sort(listed)
	for _, p := range listed {
		if !slices.Contains(mapped, p) {
			t.Errorf("package %s has no row in docs/DESIGN.md's package map", p)
		}
	}
	for _, p := range mapped {
		if !slices.Contains(listed, p) {
			t.Errorf("docs/DESIGN.md's package map has a row for %s, which go list does not know", p)
		}
	}
}
