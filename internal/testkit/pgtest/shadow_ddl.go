package pgtest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// What each shadow is made of. Every one is owned by the login that plants
// it, runs as whoever resolves it (none is SECURITY DEFINER), marks its run
// (shadowkit.mark) and then does what the object it shadows would have done,
// so that whatever resolved it goes on working and the attack goes
// unnoticed; in the positive control it only marks.

// shadowBody is a PL/pgSQL body that marks the shadow's run and then runs
// call: an expression for RETURN, a query for RETURN QUERY (setof), or a
// statement for PERFORM (void).
func shadowBody(id int, call string, setof, void bool) string {
	var run, end string
	switch {
	case setof:
		run, end = "RETURN QUERY SELECT * FROM "+call, "RETURN"
	case void:
		run, end = "PERFORM "+call, "RETURN"
	default:
		run, end = "RETURN "+call, "RETURN NULL"
	}
	return fmt.Sprintf(`$shadow$
BEGIN
    IF shadowkit.mark(%d, CURRENT_USER) THEN
        %s;
    END IF;
    %s;
END
$shadow$`, id, run, end)
}

// shadowFunctionDDL is the CREATE FUNCTION of a shadow in PL/pgSQL: params
// and ret as DDL writes them.
func shadowFunctionDDL(name, params, ret, body string) string {
	return fmt.Sprintf("CREATE FUNCTION %s(%s) RETURNS %s LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT\n"+
		"SET search_path = pg_catalog, pg_temp AS %s", name, params, ret, body)
}

// function plans the shadows of one function, aggregate or window function
// of pg_catalog's: its twin where PL/pgSQL can declare one, and its
// variants.
func (p *planner) function(f catProc) {
	if f.aggKind != "" && f.aggKind != "n" || f.kind == "w" && len(f.args) == 0 || slices.Contains(f.modes, "b") ||
		len(f.allArgs) > 0 && !f.retSet || f.ret == oidRecord && len(f.allArgs) == 0 || p.c.family(f.ret) == famNone {
		return // ordered-set aggregates, row_number(), INOUT, a record without a shape: nothing plants them
	}
	if slices.ContainsFunc(f.args, func(a uint32) bool { return p.c.family(a) == famNone }) ||
		len(f.args) > 0 && !slices.ContainsFunc(f.args, p.involved) {
		return
	}
	variadicAny := f.variadic == oidAny
	polymorphic := slices.ContainsFunc(f.args, func(a uint32) bool { return p.c.family(a) != famConcrete })
	if !slices.Contains(f.args, oidAny) && !slices.ContainsFunc(f.args, func(a uint32) bool { return p.c.family(a) == famEnum }) {
		p.emitFunction(f, f.args, 0, true)
	}
	for _, in := range p.instances(f.args, variadicAny) {
		lists := [][]uint32{in.args}
		if !polymorphic {
			lists = p.variants(in.args)
		}
		for _, args := range lists {
			p.emitFunction(f, args, in.t, false)
		}
	}
}

// emitFunction adds the shadow of f taking args. declared uses f's own
// declaration (names, defaults, VARIADIC, polymorphic types): the twin; t is
// what f's polymorphic types became in args.
func (p *planner) emitFunction(f catProc, args []uint32, t uint32, declared bool) {
	kind := "function"
	if f.kind != "f" {
		kind = "aggregate"
	}
	key := kind + sigKey(f.name, args)
	if p.seen[key] {
		return
	}
	id := p.newID()
	s := Shadow{ID: id, Schema: p.schema, Kind: kind, Twin: p.c.procSigs[sigKey(f.name, args)],
		Sig: p.signature(f.name, args)}
	variadic := f.variadic != 0 && f.variadic != oidAny && len(args) == len(f.args)
	if f.kind != "f" {
		ok := p.aggregate(&s, f, args, t, declared)
		if !ok {
			return
		}
	} else {
		params, ret, setof, ok := p.declaration(f, args, t, declared, variadic)
		if !ok {
			return
		}
		refs := make([]string, len(args))
		for i := range args {
			refs[i] = fmt.Sprintf("$%d", i+1)
		}
		if variadic {
			refs[len(refs)-1] = "VARIADIC " + refs[len(refs)-1]
		}
		call := "pg_catalog." + pgx.Identifier{f.name}.Sanitize() + "(" + strings.Join(refs, ", ") + ")"
		s.ddl = shadowFunctionDDL(p.qualified(f.name), params, ret, shadowBody(id, call, setof, f.ret == oidVoid))
		s.call = "SELECT " + pgx.Identifier{f.name}.Sanitize() + "(" + strings.Join(p.controlArgs(args, variadic), ", ") + ")"
	}
	p.add(key, s)
}

// anonymousRecord is a value of type record, for a control call of a
// shadow taking one. (ROW(1) would be compared column by column.)
const anonymousRecord = "(SELECT r FROM (SELECT 1) r)"

// controlArgs are the arguments of a control call that matches args
// exactly: typed NULLs, an anonymous record for a record, VARIADIC before the last when
// the shadow is variadic.
func (p *planner) controlArgs(args []uint32, variadic bool) []string {
	out := p.nulls(args)
	for i, a := range args {
		if a == oidRecord {
			out[i] = anonymousRecord
		}
	}
	if variadic && len(out) > 0 {
		out[len(out)-1] = "VARIADIC " + out[len(out)-1]
	}
	return out
}

// declaration returns a function shadow's parameters and result as DDL
// writes them, and whether it returns a set.
func (p *planner) declaration(f catProc, args []uint32, t uint32, declared, variadic bool) (params, ret string, setof, ok bool) {
	if declared {
		return f.argsText, f.retText, f.retSet, true
	}
	var list []string
	name := func(i int) string {
		if i < len(f.names) && f.names[i] != "" {
			return pgx.Identifier{f.names[i]}.Sanitize() + " "
		}
		return ""
	}
	if len(f.allArgs) == 0 {
		for i, a := range args {
			decl := name(i) + p.c.ref(a)
			if variadic && i == len(args)-1 {
				decl = "VARIADIC " + decl
			}
			list = append(list, decl)
		}
	} else {
		in := 0
		for i, mode := range f.modes {
			switch mode {
			case "i", "v":
				if in >= len(args) {
					return "", "", false, false
				}
				decl := name(i) + p.c.ref(args[in])
				if mode == "v" && variadic {
					decl = "VARIADIC " + decl
				}
				list = append(list, decl)
				in++
			case "o", "t":
				out, ok := p.resolve(f.allArgs[i], t)
				if !ok {
					return "", "", false, false
				}
				list = append(list, "OUT "+name(i)+p.c.ref(out))
			}
		}
	}
	r, ok := p.resolve(f.ret, t)
	if !ok {
		return "", "", false, false
	}
	switch {
	case f.retSet && len(f.allArgs) > 0:
		ret = "SETOF record"
	case f.retSet:
		ret = "SETOF " + p.c.ref(r)
	default:
		ret = p.c.ref(r)
	}
	return strings.Join(list, ", "), ret, f.retSet, true
}

// aggregate fills s with an aggregate shadow of f taking args: its state
// function marks the run and keeps a NULL state, so the aggregate returns
// NULL (an aggregate's state is rarely something PL/pgSQL can hold; what
// matters is the mark). A window function is shadowed by an aggregate too:
// used with OVER, an aggregate of the same name and a better match wins.
func (p *planner) aggregate(s *Shadow, f catProc, args []uint32, t uint32, declared bool) bool {
	state := f.ret
	if !declared {
		r, ok := p.resolve(f.ret, t)
		if !ok {
			return false
		}
		state = r
	}
	if p.c.family(state) == famNone || state == oidVoid {
		return false
	}
	sfunc := fmt.Sprintf("%s.shadow_agg_%d", pgx.Identifier{p.schema}.Sanitize(), s.ID)
	params := []string{p.c.ref(state)}
	aggArgs := []string{}
	for _, a := range args {
		params = append(params, p.c.ref(a))
		aggArgs = append(aggArgs, p.c.ref(a))
	}
	star := strings.Join(aggArgs, ", ")
	call := strings.Join(p.controlArgs(args, false), ", ")
	if len(args) == 0 {
		star, call = "*", "*"
	}
	body := fmt.Sprintf("$shadow$ BEGIN PERFORM shadowkit.mark(%d, CURRENT_USER); RETURN $1; END $shadow$", s.ID)
	s.ddl = shadowFunctionDDL(sfunc, strings.Join(params, ", "), p.c.ref(state), body) + ";\n" +
		fmt.Sprintf("CREATE AGGREGATE %s(%s) (SFUNC = %s, STYPE = %s)", p.qualified(f.name), star, sfunc, p.c.ref(state))
	s.call = "SELECT " + pgx.Identifier{f.name}.Sanitize() + "(" + call + ")"
	if f.kind == "w" {
		s.call += " OVER ()"
	}
	return true
}

// operator plans the shadows of one operator of pg_catalog's.
func (p *planner) operator(o catOp) {
	args := []uint32{o.left, o.right}
	if o.kind == "l" {
		args = []uint32{o.right}
	}
	if !slices.ContainsFunc(args, p.involved) || slices.ContainsFunc(args, func(a uint32) bool { return p.c.family(a) == famNone }) {
		return
	}
	polymorphic := slices.ContainsFunc(args, func(a uint32) bool { return p.c.family(a) != famConcrete })
	if !slices.ContainsFunc(args, func(a uint32) bool { return p.c.family(a) == famEnum }) {
		p.emitOperator(o, args, 0, true)
	}
	for _, in := range p.instances(args, false) {
		lists := [][]uint32{in.args}
		if !polymorphic {
			lists = p.variants(in.args)
		}
		for _, a := range lists {
			p.emitOperator(o, a, in.t, false)
		}
	}
}

// emitOperator adds the shadow of o taking args (one for a prefix
// operator); declared keeps o's own (polymorphic) types.
func (p *planner) emitOperator(o catOp, args []uint32, t uint32, declared bool) {
	left, right := uint32(0), args[0]
	if len(args) == 2 {
		left, right = args[0], args[1]
	}
	key := "operator" + sigKey(o.name, []uint32{left, right})
	if p.seen[key] {
		return
	}
	ret := o.result
	if !declared {
		r, ok := p.resolve(o.result, t)
		if !ok {
			return
		}
		ret = r
	}
	id := p.newID()
	fn := fmt.Sprintf("%s.shadow_op_%d", pgx.Identifier{p.schema}.Sanitize(), id)
	op := "OPERATOR(pg_catalog." + o.name + ")"
	shown := make([]string, len(args))
	params := make([]string, len(args))
	for i, a := range args {
		shown[i], params[i] = p.c.show(a), p.c.ref(a)
	}
	call := p.controlArgs(args, false)
	s := Shadow{ID: id, Schema: p.schema, Kind: "operator", Twin: p.c.opSigs[sigKey(o.name, []uint32{left, right})],
		Sig: fmt.Sprintf("%s.%s(%s)", p.schema, o.name, strings.Join(shown, ","))}
	var expr, create string
	if len(args) == 2 {
		expr = "$1 " + op + " $2"
		create = fmt.Sprintf("CREATE OPERATOR %s.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)",
			pgx.Identifier{p.schema}.Sanitize(), o.name, params[0], params[1], fn)
		s.call = fmt.Sprintf("SELECT (%s) %s (%s)", call[0], o.name, call[1])
	} else {
		expr = op + " $1"
		create = fmt.Sprintf("CREATE OPERATOR %s.%s (RIGHTARG = %s, FUNCTION = %s)",
			pgx.Identifier{p.schema}.Sanitize(), o.name, params[0], fn)
		s.call = fmt.Sprintf("SELECT %s (%s)", o.name, call[0])
	}
	s.ddl = shadowFunctionDDL(fn, strings.Join(params, ", "), p.c.ref(ret), shadowBody(id, expr, false, false)) + ";\n" + create
	p.add(key, s)
}

// typeName plans the domain named like a type of pg_catalog's: a cast or
// declaration that names the type unqualified makes its value a value of
// the domain, and coercing to a domain runs its CHECK. (Types that SQL's
// grammar spells with keywords, integer or interval, always mean
// pg_catalog's: only a quoted name finds the domain.)
func (p *planner) typeName(oid uint32) {
	t := p.c.types[oid]
	id := p.newID()
	p.add("type"+t.name, Shadow{ID: id, Schema: p.schema, Kind: "type", Twin: true,
		Sig: p.schema + "." + t.name,
		ddl: fmt.Sprintf("CREATE DOMAIN %s AS %s CHECK (shadowkit.mark(%d, CURRENT_USER) IS NOT NULL)",
			p.qualified(t.name), p.c.ref(oid), id),
		call: "SELECT NULL::" + pgx.Identifier{t.name}.Sanitize(),
	})
}

// plan returns every shadow of the schema: for each function of names, each
// operator and each base type of pg_catalog's.
func (p *planner) plan() []Shadow {
	for _, f := range p.c.procs {
		p.function(f)
	}
	for _, o := range p.c.ops {
		p.operator(o)
	}
	var types []uint32
	for oid, t := range p.c.types {
		if t.nsp == "pg_catalog" && t.typtype == "b" && t.category != "A" {
			types = append(types, oid)
		}
	}
	slices.Sort(types)
	for _, oid := range types {
		p.typeName(oid)
	}
	return p.out
}
