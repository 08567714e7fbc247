package data_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
)

// TestKindsListsEveryKind: data.Kinds, the one list of event kinds the
// exporter and the CLI derive theirs from, holds every Kind constant that
// types.go declares, once, but KindRenewed (a notification, never a row).
func TestKindsListsEveryKind(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Kind" {
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						declared = append(declared, lit.Value[1:len(lit.Value)-1])
					}
				}
			}
		}
		return true
	})
	if len(declared) < 10 {
		t.Fatalf("found %d Kind constants in types.go, want them all: %v", len(declared), declared)
	}
	kinds := data.Kinds()
	for _, k := range declared {
		switch n := count(kinds, data.Kind(k)); {
		case k == string(data.KindRenewed) && n != 0:
			t.Errorf("Kinds() lists %s, which is never an event row", k)
		case k != string(data.KindRenewed) && n != 1:
			t.Errorf("Kinds() lists %s %d times, want once", k, n)
		}
		if !data.Kind(k).Valid() {
			t.Errorf("Kind(%q).Valid() = false", k)
		}
	}
	if len(kinds) != len(declared)-1 {
		t.Errorf("Kinds() = %v, want the %d declared kinds but renewed", kinds, len(declared)-1)
	}
	if data.Kind("stolen").Valid() {
		t.Error(`Kind("stolen").Valid() = true`)
	}
}

func count(kinds []data.Kind, k data.Kind) int {
	return len(slices.DeleteFunc(slices.Clone(kinds), func(x data.Kind) bool { return x != k }))
}
