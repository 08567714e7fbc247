package data_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPublicNamesExist: every name doc.go's "What is public" promises is an
// exported name of the package (a method as Type.Method, found on the type
// of internal/data the alias names), so that the promise cannot outlive a
// rename or a removal unnoticed.
func TestPublicNamesExist(t *testing.T) {
	face, impl := exportedNames(t, ".", "data"), exportedNames(t, "../internal/data", "data")
	for _, name := range docList(t, "# What is public") {
		typ, method, isMethod := strings.Cut(name, ".")
		switch {
		case !face[name] && !isMethod:
			t.Errorf("doc.go promises %s, which package data does not export", name)
		case isMethod && (!face[typ] || !impl[typ+"."+method]):
			t.Errorf("doc.go promises %s, which package data's %s does not have", name, typ)
		}
	}
}

// TestFaceListsEveryName: every name package data exports is in one of
// doc.go's lists, so that go doc shows nothing the doc does not account for
// (a constant counts as listed by its type's "and its constants").
func TestFaceListsEveryName(t *testing.T) {
	listed := map[string]bool{}
	for _, section := range []string{"# What is public", "# What the public packages hand out"} {
		for _, name := range docList(t, section) {
			listed[name] = true
		}
	}
	constants := regexp.MustCompile(`^(Kind|Listener|Poll|Ask)[A-Z]`)
	for name := range exportedNames(t, ".", "data") {
		if !listed[name] && !strings.Contains(name, ".") && !constants.MatchString(name) {
			t.Errorf("package data exports %s, which no list of doc.go names", name)
		}
	}
}

// docList returns the names in the bullets of doc.go's section heading.
func docList(t *testing.T, heading string) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	start := strings.Index(doc, "// "+heading)
	if start < 0 {
		t.Fatalf("doc.go has no %q section", heading)
	}
	section := doc[start+len(heading)+3:]
	if end := strings.Index(section, "// #"); end >= 0 {
		section = section[:end]
	}
	var names []string
	ident := regexp.MustCompile(`\b[A-Z][A-Za-z]*(\.[A-Z][A-Za-z]*)?\b`)
	for line := range strings.Lines(section) {
		switch {
		case strings.HasPrefix(line, "//   - "): // a bullet: its heading, then names
			list := strings.TrimPrefix(line, "//   - ")
			if _, after, ok := strings.Cut(list, ":"); ok {
				list = after
			}
			names = append(names, ident.FindAllString(list, -1)...)
		case strings.HasPrefix(line, "//     "): // a bullet's next line
			names = append(names, ident.FindAllString(line, -1)...)
		}
	}
	if len(names) < 10 {
		t.Fatalf("found %d names under %q in doc.go, want the list: %v", len(names), heading, names)
	}
	return names
}

// exportedNames returns the exported names of the package pkg in dir,
// methods as Type.Method.
func exportedNames(t *testing.T, dir, pkg string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	add := func(name string, exported bool) {
		if exported {
			names[name] = true
		}
	}
	for _, f := range pkgs[pkg].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil {
					typ := d.Recv.List[0].Type
					if star, ok := typ.(*ast.StarExpr); ok {
						typ = star.X
					}
					name = typ.(*ast.Ident).Name + "." + name
				}
				add(name, ast.IsExported(d.Name.Name))
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						add(spec.Name.Name, spec.Name.IsExported())
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(n.Name, n.IsExported())
						}
					}
				}
			}
		}
	}
	return names
}
