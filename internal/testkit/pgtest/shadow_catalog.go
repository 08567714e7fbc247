package pgtest

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The catalog as the shadow planner reads it: the types of pg_catalog and
// lease, the implicit casts between them, and the functions and operators
// of pg_catalog that a shadow may stand in for.

// catType is one type of pg_catalog or lease.
type catType struct {
	oid      uint32
	nsp      string
	name     string
	typtype  string // b base, c composite, d domain, e enum, p pseudo, r range, m multirange
	category string // typcategory: A for arrays
	elem     uint32 // an array's element type
	array    uint32 // the type's array type, 0 when it has none
	base     uint32 // a domain's base type
	relkind  string // a composite type's relation kind
	part     bool   // a composite type of a partition
}

// catProc is one function, aggregate or window function of pg_catalog.
type catProc struct {
	name     string
	kind     string // f function, a aggregate, w window
	aggKind  string // n normal aggregate, o ordered-set, h hypothetical
	args     []uint32
	ret      uint32
	retSet   bool
	variadic uint32   // the variadic parameter's element type, 0 when none
	allArgs  []uint32 // with OUT parameters, when it has any
	modes    []string
	names    []string
	argsText string // pg_get_function_arguments: names, modes and defaults, as declared
	retText  string // pg_get_function_result
}

// catOp is one operator of pg_catalog.
type catOp struct {
	name                string
	kind                string // b binary, l prefix
	left, right, result uint32
}

// catalog is what readCatalog found.
type catalog struct {
	types    map[uint32]*catType
	implicit map[uint32][]uint32 // target type: the types with an implicit cast to it
	procs    []catProc
	ops      []catOp
	procSigs map[string]bool // name(args) of every pg_catalog function read
	opSigs   map[string]bool // name(left,right) of every pg_catalog operator
}

// The pseudo-types a shadow replaces by concrete types (catalog.family), and
// void. PostgreSQL fixes their OIDs (pg_type.dat).
const (
	oidAny                   = 2276
	oidAnyElement            = 2283
	oidAnyArray              = 2277
	oidAnyNonArray           = 2776
	oidAnyEnum               = 3500
	oidAnyCompatible         = 5077
	oidAnyCompatibleArray    = 5078
	oidAnyCompatibleNonArray = 5079
	oidRecord                = 2249
	oidVoid                  = 2278
)

// readCatalog reads the catalog of the database q is connected to; names are
// the function names whose pg_catalog overloads get shadows.
func readCatalog(ctx context.Context, q *pgx.Conn, names []string) (*catalog, error) {
	c := &catalog{types: map[uint32]*catType{}, implicit: map[uint32][]uint32{}, procSigs: map[string]bool{}, opSigs: map[string]bool{}}
	rows, err := q.Query(ctx, `
		SELECT t.oid, n.nspname::text, t.typname::text, t.typtype::text, t.typcategory::text, t.typelem, t.typarray,
		       t.typbasetype, coalesce(r.relkind::text, ''), coalesce(r.relispartition, false)
		  FROM pg_catalog.pg_type t
		  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
		  LEFT JOIN pg_catalog.pg_class r ON r.oid = t.typrelid
		 WHERE n.nspname IN ('pg_catalog', 'lease')`)
	if err != nil {
		return nil, fmt.Errorf("read types: %w", err)
	}
	for rows.Next() {
		var t catType
		if err := rows.Scan(&t.oid, &t.nsp, &t.name, &t.typtype, &t.category, &t.elem, &t.array, &t.base, &t.relkind, &t.part); err != nil {
			return nil, fmt.Errorf("read types: %w", err)
		}
		c.types[t.oid] = &t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read types: %w", err)
	}
	var src, dst []uint32
	if err := q.QueryRow(ctx, `SELECT coalesce(array_agg(castsource), '{}'), coalesce(array_agg(casttarget), '{}')
		  FROM pg_catalog.pg_cast WHERE castcontext = 'i'`).Scan(&src, &dst); err != nil {
		return nil, fmt.Errorf("read casts: %w", err)
	}
	for i := range src {
		c.implicit[dst[i]] = append(c.implicit[dst[i]], src[i])
	}
	if err := c.readProcs(ctx, q, names); err != nil {
		return nil, err
	}
	return c, c.readOps(ctx, q)
}

func (c *catalog) readProcs(ctx context.Context, q *pgx.Conn, names []string) error {
	rows, err := q.Query(ctx, `
		SELECT p.proname::text, p.prokind::text, coalesce(a.aggkind::text, ''), p.proargtypes::oid[], p.prorettype,
		       p.proretset, p.provariadic, coalesce(p.proallargtypes, '{}'), coalesce(p.proargmodes::text[], '{}'),
		       coalesce(p.proargnames, '{}'), pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid)
		  FROM pg_catalog.pg_proc p
		  LEFT JOIN pg_catalog.pg_aggregate a ON a.aggfnoid = p.oid
		 WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AND p.proname = ANY ($1::name[])
		 ORDER BY p.proname, p.oid`, names)
	if err != nil {
		return fmt.Errorf("read functions: %w", err)
	}
	for rows.Next() {
		var p catProc
		if err := rows.Scan(&p.name, &p.kind, &p.aggKind, &p.args, &p.ret, &p.retSet, &p.variadic,
			&p.allArgs, &p.modes, &p.names, &p.argsText, &p.retText); err != nil {
			return fmt.Errorf("read functions: %w", err)
		}
		c.procs = append(c.procs, p)
		c.procSigs[sigKey(p.name, p.args)] = true
	}
	return rows.Err()
}

func (c *catalog) readOps(ctx context.Context, q *pgx.Conn) error {
	rows, err := q.Query(ctx, `SELECT oprname::text, oprkind::text, oprleft, oprright, oprresult
		  FROM pg_catalog.pg_operator WHERE oprnamespace = 'pg_catalog'::pg_catalog.regnamespace ORDER BY oid`)
	if err != nil {
		return fmt.Errorf("read operators: %w", err)
	}
	for rows.Next() {
		var o catOp
		if err := rows.Scan(&o.name, &o.kind, &o.left, &o.right, &o.result); err != nil {
			return fmt.Errorf("read operators: %w", err)
		}
		c.ops = append(c.ops, o)
		c.opSigs[sigKey(o.name, []uint32{o.left, o.right})] = true
	}
	return rows.Err()
}

// sigKey is a name with argument types, as a map key.
func sigKey(name string, args []uint32) string { return fmt.Sprint(name, args) }

// ref is a type as DDL and the control's calls name it: schema-qualified and
// quoted, so that no shadow of a type name can stand in for it.
func (c *catalog) ref(oid uint32) string {
	t := c.types[oid]
	return pgx.Identifier{t.nsp, t.name}.Sanitize()
}

// show is a type as a person reads it: lease.id_text, text[].
func (c *catalog) show(oid uint32) string {
	t := c.types[oid]
	if t.category == "A" && t.elem != 0 {
		return c.show(t.elem) + "[]"
	}
	if t.nsp == "pg_catalog" {
		return t.name
	}
	return t.nsp + "." + t.name
}

// leaseTypes are lease's own types that a statement can hold a value of:
// the domains, enums and composite types (of tables, views and CREATE TYPE,
// not of partitions, which no statement names).
func (c *catalog) leaseTypes() []uint32 {
	var out []uint32
	for oid, t := range c.types {
		if t.nsp != "lease" || t.category == "A" {
			continue
		}
		switch t.typtype {
		case "d", "e":
			out = append(out, oid)
		case "c":
			if !t.part && slices.Contains([]string{"r", "p", "v", "m", "c"}, t.relkind) {
				out = append(out, oid)
			}
		}
	}
	slices.Sort(out)
	return out
}

// coreTypes are the pg_catalog types a shadow is planted over: those of
// extra, and the base types of lease's columns and of its functions'
// parameters and results (elements for arrays).
func (c *catalog) coreTypes(ctx context.Context, q *pgx.Conn, extra []string) ([]uint32, error) {
	var used []uint32
	err := q.QueryRow(ctx, `
		SELECT coalesce(array_agg(DISTINCT x), '{}') FROM (
		  SELECT a.atttypid AS x FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class r ON r.oid = a.attrelid
		   WHERE r.relnamespace = 'lease'::pg_catalog.regnamespace AND a.attnum > 0 AND NOT a.attisdropped
		  UNION SELECT pg_catalog.unnest(p.proargtypes::oid[]) FROM pg_catalog.pg_proc p
		   WHERE p.pronamespace = 'lease'::pg_catalog.regnamespace
		  UNION SELECT p.prorettype FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'lease'::pg_catalog.regnamespace) s`).Scan(&used)
	if err != nil {
		return nil, fmt.Errorf("read the types lease uses: %w", err)
	}
	seen := map[uint32]bool{}
	var out []uint32
	add := func(oid uint32) {
		for {
			t := c.types[oid]
			switch {
			case t == nil:
				return
			case t.typtype == "d":
				oid = t.base
				continue
			case t.category == "A" && t.elem != 0:
				oid = t.elem
				continue
			}
			if t.nsp == "pg_catalog" && t.typtype == "b" && !seen[oid] {
				seen[oid] = true
				out = append(out, oid)
			}
			return
		}
	}
	for _, oid := range used {
		add(oid)
	}
	for _, name := range extra {
		for oid, t := range c.types {
			if t.nsp == "pg_catalog" && t.name == name {
				add(oid)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
