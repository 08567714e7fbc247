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
// exported name of the package (a method as Type.Method), so that the promise
// cannot outlive a rename or a removal unnoticed.
func TestPublicNamesExist(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	start, end := strings.Index(doc, "// # What is public"), strings.Index(doc, "// Everything else is exported")
	if start < 0 || end < start {
		t.Fatal(`doc.go has no "# What is public" section followed by "Everything else is exported"`)
	}
	var promised []string
	ident := regexp.MustCompile(`\b[A-Z][A-Za-z]*(\.[A-Z][A-Za-z]*)?\b`)
	for line := range strings.Lines(doc[start:end]) {
		switch {
		case strings.HasPrefix(line, "//   - "): // a bullet: its heading, then names
			names := strings.TrimPrefix(line, "//   - ")
			if _, after, ok := strings.Cut(names, ":"); ok {
				names = after
			}
			promised = append(promised, ident.FindAllString(names, -1)...)
		case strings.HasPrefix(line, "//     "): // a bullet's next line
			promised = append(promised, ident.FindAllString(line, -1)...)
		}
	}
	if len(promised) < 10 {
		t.Fatalf("found %d promised names in doc.go, want the list: %v", len(promised), promised)
	}
	exported := exportedNames(t)
	for _, name := range promised {
		if !exported[name] {
			t.Errorf("doc.go promises %s, which package data does not export", name)
		}
	}
}

// exportedNames returns the package's exported names, methods as
// Type.Method.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range pkgs["data"].Files {
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
				names[name] = ast.IsExported(d.Name.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						names[spec.Name.Name] = spec.Name.IsExported()
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							names[n.Name] = n.IsExported()
						}
					}
				}
			}
		}
	}
	return names
}
