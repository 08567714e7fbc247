package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// A function of schema lease as the migrated database's catalogue has it.
type catalogFunction struct {
	name     string
	args     []catalogArg // the IN arguments, in order
	defaults int          // how many of the last args have a default
	result   string       // as docs/sql.md writes it: a type, (names types) or TABLE(names types)
	cols     []string     // the result's column names, when it has columns
	definer  bool
	volatile string   // volatile, stable, immutable
	config   []string // proconfig: name=value, in order
	owner    string
	execute  []string // roles granted EXECUTE besides the owner, sorted
}

type catalogArg struct{ name, typ string }

// catalogFunctions reads every function of schema lease from pg_proc.
func catalogFunctions(t *testing.T) map[string]catalogFunction {
	t.Helper()
	db := pgtest.New(t)
	rows, err := db.Conn(t).Query(context.Background(), `
		SELECT p.proname::text, p.prosecdef,
		       CASE p.provolatile WHEN 'v' THEN 'volatile' WHEN 's' THEN 'stable' ELSE 'immutable' END,
		       coalesce(p.proconfig, '{}'), pg_get_userbyid(p.proowner)::text,
		       ARRAY(SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END
		               FROM aclexplode(p.proacl) a
		              WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner ORDER BY 1),
		       p.pronargdefaults, p.proretset, format_type(p.prorettype, NULL), t.typtype::text,
		       coalesce(p.proargnames, '{}'), coalesce(p.proargmodes::text[], '{}'),
		       ARRAY(SELECT format_type(x, NULL) FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY u(x, n) ORDER BY n),
		       ARRAY(SELECT a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		              WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_type t ON t.oid = p.prorettype
		 WHERE n.nspname = 'lease'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]catalogFunction{}
	for rows.Next() {
		var (
			f                        catalogFunction
			retset                   bool
			rettype, typtype         string
			names, modes, types, row []string
		)
		if err := rows.Scan(&f.name, &f.definer, &f.volatile, &f.config, &f.owner, &f.execute,
			&f.defaults, &retset, &rettype, &typtype, &names, &modes, &types, &row); err != nil {
			t.Fatal(err)
		}
		var outCols []string
		table := false
		for i, typ := range types {
			mode := "i"
			if len(modes) > 0 {
				mode = modes[i]
			}
			name := ""
			if i < len(names) {
				name = names[i]
			}
			switch mode {
			case "i", "b":
				f.args = append(f.args, catalogArg{name, shortType(typ)})
			case "t":
				table = true
				fallthrough
			case "o":
				outCols = append(outCols, name+" "+shortType(typ))
			}
		}
		switch {
		case table:
			f.result = "TABLE(" + strings.Join(outCols, ", ") + ")"
		case len(outCols) > 0:
			f.result = "(" + strings.Join(outCols, ", ") + ")"
		case typtype == "c":
			for i := range row {
				name, typ, _ := strings.Cut(row[i], " ")
				row[i] = name + " " + shortType(typ)
			}
			outCols = row
			f.result = "(" + strings.Join(row, ", ") + ")"
		case retset:
			f.result = "setof " + shortType(rettype)
		default:
			f.result = shortType(rettype)
		}
		for _, c := range outCols {
			name, _, _ := strings.Cut(c, " ")
			f.cols = append(f.cols, name)
		}
		if _, dup := out[f.name]; dup {
			t.Errorf("lease.%s is overloaded: the docs name functions by name alone", f.name)
		}
		out[f.name] = f
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shortType is a type as the docs write it.
func shortType(typ string) string {
	return strings.ReplaceAll(typ, "timestamp with time zone", "timestamptz")
}

// signature is f's call as docs/sql.md writes it: the arguments with their
// types, those with defaults in brackets, and the result.
func (f catalogFunction) signature() string {
	var b strings.Builder
	b.WriteString("lease." + f.name + "(")
	for i, a := range f.args {
		switch {
		case i == len(f.args)-f.defaults && i > 0:
			b.WriteString(" [, ")
		case i == len(f.args)-f.defaults:
			b.WriteString("[")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(a.name + " " + a.typ)
	}
	if f.defaults > 0 {
		b.WriteString("]")
	}
	b.WriteString(") → " + f.result)
	return b.String()
}

// row is f's line in docs/sql.md's table.
func (f catalogFunction) row() string {
	as := "caller"
	if f.definer {
		as = "definer"
	}
	path, lock := "—", "—"
	var other []string
	for _, c := range f.config {
		name, value, _ := strings.Cut(c, "=")
		switch name {
		case "search_path":
			path = "`" + value + "`"
		case "lock_timeout":
			lock = value
		default:
			other = append(other, "`"+c+"`")
		}
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s | %s |", f.signature(), as, path, lock,
		orDash(strings.Join(other, ", ")), f.volatile, orDash(codeList(f.execute)))
}

func codeList(names []string) string {
	var out []string
	for _, n := range names {
		out = append(out, "`"+n+"`")
	}
	return strings.Join(out, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// TestFunctionAttributes: docs/sql.md has one row per function of schema
// lease, and each says what the migrated database's catalogue has: its
// arguments and result, whether it runs as its owner (SECURITY DEFINER),
// its settings (search_path, lock_timeout and the others), its volatility
// and who may execute it; every function is owned by lease_owner, as the
// document says. A function added to sql/ fails here until the document
// has its row; a changed attribute, until its row says so.
func TestFunctionAttributes(t *testing.T) {
	b, err := os.ReadFile("docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, "owned by `lease_owner`") {
		t.Error("docs/sql.md does not say who owns the functions (\"owned by `lease_owner`\")")
	}
	rows := map[string]string{}
	rowName := regexp.MustCompile("^\\| `lease\\.(\\w+)\\(")
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\n")
		if m := rowName.FindStringSubmatch(line); m != nil {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("docs/sql.md has two rows for lease.%s", m[1])
			}
			rows[m[1]] = line
		}
	}
	fns := catalogFunctions(t)
	for name, f := range fns {
		if f.owner != "lease_owner" {
			t.Errorf("lease.%s is owned by %s, want lease_owner", name, f.owner)
		}
		got, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("docs/sql.md has no row for lease.%s; the schema has:\n%s", name, f.row())
		case got != f.row():
			t.Errorf("docs/sql.md's row for lease.%s:\n%s\nthe schema has:\n%s", name, got, f.row())
		}
	}
	for name := range rows {
		if _, ok := fns[name]; !ok {
			t.Errorf("docs/sql.md has a row for lease.%s, which the schema does not have", name)
		}
	}
}

// contractCall is one call the SQL contract writes out: lease.name(args)
// or lease.name(args) → result, in a code span.
type contractCall struct {
	name     string
	args     []string // argument names; optional ones after a "["
	optional int      // how many of the last are in brackets
	result   string   // empty when the contract gives none
}

// sqlContract returns the SQL contract: docs/sql.md up to its table of
// every function (whose rows TestFunctionAttributes checks).
func sqlContract(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	contract, _, ok := strings.Cut(string(b), "\n## Every function, as the catalogue has it\n")
	if !ok {
		t.Fatal("docs/sql.md has no \"## Every function, as the catalogue has it\"")
	}
	return contract
}

// contractCalls finds the SQL contract's calls: code spans of the form
// `lease.name(arg, arg [, arg]) → result` (the "lease." may be left out
// after the first) outside code blocks, whose arguments are names, not
// values.
func contractCalls(t *testing.T, known map[string]catalogFunction) []contractCall {
	t.Helper()
	var prose strings.Builder
	inBlock := false
	for line := range strings.Lines(sqlContract(t)) {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			prose.WriteString(line)
		}
	}
	span := regexp.MustCompile("`([^`]+)`")
	call := regexp.MustCompile(`^(?:lease\.)?(\w+)\(([\w\s,\[\]]*)\)(?:\s*→\s*(.+))?$`)
	var out []contractCall
	for _, m := range span.FindAllStringSubmatch(prose.String(), -1) {
		c := call.FindStringSubmatch(strings.Join(strings.Fields(m[1]), " "))
		if c == nil {
			continue
		}
		if _, ok := known[c[1]]; !ok {
			continue // not a lease function (clock_timestamp(), ...)
		}
		rc := contractCall{name: c[1], result: c[3]}
		args, opt, _ := strings.Cut(c[2], "[")
		for _, part := range []string{args, opt} {
			for a := range strings.SplitSeq(strings.Trim(part, " ,]"), ",") {
				if a = strings.TrimSpace(a); a != "" {
					rc.args = append(rc.args, a)
					if part == opt {
						rc.optional++
					}
				}
			}
		}
		out = append(out, rc)
	}
	return out
}

// TestSQLContractCallsMatchTheSchema: every call the SQL contract
// (docs/sql.md, above its table of every function) writes out names the
// function's arguments in the schema's order, puts in brackets only
// arguments that have defaults, and, when it gives a result, gives the
// schema's: its type, or its columns by name. The protocol's calls, which
// have sections of their own, appear so with their results; the contract
// names every other function (the table below it has them all in full).
func TestSQLContractCallsMatchTheSchema(t *testing.T) {
	fns := catalogFunctions(t)
	calls := contractCalls(t, fns)
	if len(calls) < 10 {
		t.Fatalf("found %d calls in docs/sql.md's contract, want its calls: %+v", len(calls), calls)
	}
	withResult := map[string]bool{}
	for _, c := range calls {
		f := fns[c.name]
		var want []string
		for _, a := range f.args {
			want = append(want, a.name)
		}
		if !slices.Equal(c.args, want) {
			t.Errorf("SQL contract: lease.%s(%s), but the schema's arguments are (%s)", c.name, strings.Join(c.args, ", "), strings.Join(want, ", "))
		}
		if c.optional > f.defaults {
			t.Errorf("SQL contract: lease.%s has %d optional arguments, the schema gives %d a default", c.name, c.optional, f.defaults)
		}
		if c.result == "" {
			continue
		}
		withResult[c.name] = true
		if got := contractResult(c.result); got != strings.Join(f.cols, ", ") && got != strings.TrimPrefix(f.result, "setof ") {
			t.Errorf("SQL contract: lease.%s(...) → %s, but the schema's result is %s", c.name, c.result, f.result)
		}
	}
	contract := sqlContract(t)
	for name := range fns {
		if !strings.HasPrefix(name, "on_") && !strings.Contains(contract, name) {
			t.Errorf("docs/sql.md's contract does not name lease.%s (its table has its row)", name)
		}
	}
	for _, name := range []string{"acquire", "renew", "renew_many", "release", "force_release", "preempt", "check_fence", "enqueue"} {
		if !withResult[name] {
			t.Errorf("SQL contract: lease.%s is never written out with its arguments and result; the schema has %s", name, fns[name].signature())
		}
	}
}

// contractResult is a result as the contract writes it, reduced to what
// the schema's is compared with: column names, or a type.
func contractResult(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "TABLE")
	s = strings.TrimSuffix(strings.TrimPrefix(s, "("), ")")
	return strings.Join(strings.Fields(s), " ")
}
