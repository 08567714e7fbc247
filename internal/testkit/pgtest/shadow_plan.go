package pgtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Shadow is one object planted where an unqualified name could find it in
// place of PostgreSQL's own: a function, aggregate or operator named like
// one of pg_catalog's, or a domain named like one of its types. Each writes
// a marker when it runs (PlantShadows).
type Shadow struct {
	ID     int
	Schema string
	Kind   string // "function", "aggregate", "operator" or "type"
	// Twin: the same name and argument types as pg_catalog's own, which it
	// beats only where its schema comes before pg_catalog in the search
	// path. Otherwise it is a better match than anything of pg_catalog's
	// (a domain of lease's, or a type with an implicit cast, in place of a
	// parameter's type; a concrete type in place of a polymorphic one),
	// which wins wherever its schema is in the path.
	Twin bool
	Sig  string // what it shadows, as a person reads it: public.=(lease.id_text,text)

	ddl  string // what plants it
	call string // an unqualified use of exactly it, for the positive control
}

func (s Shadow) String() string { return s.Sig }

// Polymorphic families: how a shadow replaces a pseudo-type parameter.
const (
	famConcrete = ""
	famElem     = "element" // anyelement, anynonarray, anycompatible(nonarray), "any": a type
	famArray    = "array"   // anyarray, anycompatiblearray: an array type
	famRecord   = "record"  // record: a composite type of lease's
	famEnum     = "enum"    // anyenum: an enum of lease's
	famNone     = "none"    // a pseudo-type no shadow can take (internal, cstring, anyrange…)
)

func (c *catalog) family(oid uint32) string {
	switch oid {
	case oidAnyElement, oidAnyNonArray, oidAnyCompatible, oidAnyCompatibleNonArray, oidAny:
		return famElem
	case oidAnyArray, oidAnyCompatibleArray:
		return famArray
	case oidRecord:
		return famRecord
	case oidAnyEnum:
		return famEnum
	}
	if t := c.types[oid]; t == nil || t.typtype == "p" && oid != oidVoid {
		return famNone
	}
	return famConcrete
}

// planner makes the shadows of one schema.
type planner struct {
	c       *catalog
	schema  string
	core    []uint32 // pg_catalog's types that the shadows are planted over
	lease   []uint32 // lease's domains, enums and composite types
	scalars []uint32 // core and lease: what a polymorphic parameter becomes
	nextID  *int
	seen    map[string]bool
	out     []Shadow
}

func newPlanner(c *catalog, schema string, core []uint32, nextID *int) *planner {
	p := &planner{c: c, schema: schema, core: core, lease: c.leaseTypes(), nextID: nextID, seen: map[string]bool{}}
	p.scalars = append(slices.Clone(core), p.lease...)
	return p
}

func (p *planner) isCore(oid uint32) bool { return slices.Contains(p.core, oid) }

// involved reports whether a parameter of type oid makes its object worth
// shadowing: one of the core types or their arrays, or a polymorphic one.
func (p *planner) involved(oid uint32) bool {
	if f := p.c.family(oid); f != famConcrete {
		return f != famNone
	}
	t := p.c.types[oid]
	if t.category == "A" && t.elem != 0 {
		return p.isCore(t.elem)
	}
	return p.isCore(oid)
}

// better returns the types a value may have that reach oid with a better
// match than any object of pg_catalog's taking oid: lease's domains over
// it, the core types with an implicit cast to it, and for an array the
// arrays of those.
func (p *planner) better(oid uint32) []uint32 {
	t := p.c.types[oid]
	if t.category == "A" && t.elem != 0 {
		var out []uint32
		for _, e := range p.better(t.elem) {
			if a := p.c.types[e].array; a != 0 {
				out = append(out, a)
			}
		}
		return out
	}
	var out []uint32
	for _, l := range p.lease {
		if p.c.types[l].typtype == "d" && p.c.types[l].base == oid {
			out = append(out, l)
		}
	}
	for _, src := range p.c.implicit[oid] {
		if p.isCore(src) {
			out = append(out, src)
		}
	}
	return out
}

// instance is a polymorphic signature made concrete with one type.
type instance struct {
	args []uint32
	t    uint32 // what the element family became; 0 when nothing was polymorphic
}

// instances returns the concrete argument lists a shadow of args takes:
// args itself when nothing in it is polymorphic, else one per type its
// polymorphic parameters can take (the same type for all of them). A
// variadic "any" parameter becomes one and then two parameters of it.
func (p *planner) instances(args []uint32, variadicAny bool) []instance {
	fams := map[string]bool{}
	for _, a := range args {
		fams[p.c.family(a)] = true
	}
	if fams[famNone] {
		return nil
	}
	delete(fams, famConcrete)
	if len(fams) == 0 {
		return []instance{{args: args}}
	}
	var candidates []uint32
	switch {
	case fams[famRecord]:
		if len(fams) > 1 {
			return nil
		}
		for _, l := range p.lease {
			if p.c.types[l].typtype == "c" {
				candidates = append(candidates, l)
			}
		}
	case fams[famEnum]:
		for _, l := range p.lease {
			if p.c.types[l].typtype == "e" {
				candidates = append(candidates, l)
			}
		}
	default:
		candidates = p.scalars
	}
	var out []instance
	for _, t := range candidates {
		conc, ok := p.resolveAll(args, t)
		if !ok {
			continue
		}
		if !variadicAny {
			out = append(out, instance{args: conc, t: t})
			continue
		}
		last := conc[len(conc)-1]
		out = append(out, instance{args: conc, t: t}, instance{args: append(slices.Clone(conc), last), t: t})
	}
	return out
}

// resolveAll makes each polymorphic type of args concrete with t.
func (p *planner) resolveAll(args []uint32, t uint32) ([]uint32, bool) {
	out := make([]uint32, len(args))
	for i, a := range args {
		r, ok := p.resolve(a, t)
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// resolve is what the polymorphic type oid becomes when its family's type
// is t: t, its array, or oid itself when oid is concrete.
func (p *planner) resolve(oid, t uint32) (uint32, bool) {
	switch p.c.family(oid) {
	case famElem, famRecord, famEnum:
		return t, t != 0
	case famArray:
		if t == 0 || p.c.types[t].array == 0 {
			return 0, false
		}
		return p.c.types[t].array, true
	case famNone:
		return 0, false
	}
	return oid, true
}

// variants returns args and the argument lists that replace one of its
// types, or every occurrence of one of its types, with a better match; for
// two parameters (an operator's), every combination.
func (p *planner) variants(args []uint32) [][]uint32 {
	out := [][]uint32{args}
	if len(args) == 2 {
		for _, l := range append([]uint32{args[0]}, p.better(args[0])...) {
			for _, r := range append([]uint32{args[1]}, p.better(args[1])...) {
				out = append(out, []uint32{l, r})
			}
		}
		return out
	}
	for i, a := range args {
		for _, b := range p.better(a) {
			v := slices.Clone(args)
			v[i] = b
			out = append(out, v)
		}
	}
	counted := map[uint32]int{}
	for _, a := range args {
		counted[a]++
	}
	for a, n := range counted {
		if n < 2 {
			continue
		}
		for _, b := range p.better(a) {
			v := slices.Clone(args)
			for i := range v {
				if v[i] == a {
					v[i] = b
				}
			}
			out = append(out, v)
		}
	}
	return out
}

// add records a shadow unless the schema already has one with its key.
func (p *planner) add(key string, s Shadow) {
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	p.out = append(p.out, s)
}

func (p *planner) newID() int {
	*p.nextID++
	return *p.nextID
}

func (p *planner) qualified(name string) string {
	return pgx.Identifier{p.schema}.Sanitize() + "." + pgx.Identifier{name}.Sanitize()
}

// signature shows name(args) as a person reads it, in the planner's schema.
func (p *planner) signature(name string, args []uint32) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = p.c.show(a)
	}
	return fmt.Sprintf("%s.%s(%s)", p.schema, name, strings.Join(shown, ","))
}

// nulls returns a typed NULL of each of args, for a call that matches
// exactly those types.
func (p *planner) nulls(args []uint32) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "NULL::" + p.neutral(a)
	}
	return out
}

// neutral is the type a control call gives a parameter of type oid: oid
// itself, or for a polymorphic one a type no other shadow takes (point), so
// that the call finds the polymorphic twin and no concrete variant.
func (p *planner) neutral(oid uint32) string {
	switch p.c.family(oid) {
	case famElem:
		return `"pg_catalog"."point"`
	case famArray:
		return `"pg_catalog"."_point"`
	}
	return p.c.ref(oid)
}
