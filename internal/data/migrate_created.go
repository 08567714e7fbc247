package data

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	leasesql "github.com/leasetop/leasetop/sql"
)

// created is what the migration's files create in schema lease, by name,
// read from the files themselves (sql.Files and sql.Upgrade), so that a
// function or table a file adds is known to migrate's check for foreign
// objects (foreign.go) without a second list to keep.
//
// What the files make under names of their own making is known by rule, in
// the check's query: the partitions of lease.event (named by the day), the
// sequences of identity columns, the indexes of lease tables, a domain's
// constraint named <domain>_check, and the internal triggers of foreign
// keys between lease tables.
type created struct {
	// Funcs are the functions' names and FuncArgs their argument types, as
	// the files spell them (timestamptz, lease.event, text[]), joined by
	// commas: the check reads them with to_regtype. Old signatures the files
	// drop count too (a database not migrated yet still has them).
	Funcs, FuncArgs []string
	// Dropped are the signatures among them ("name(args)") that a file
	// drops: a migrated schema has none of them.
	Dropped []string
	// Relations are the tables and sequences, Types the domains and
	// composite types, by name; Triggers the triggers, as "name table".
	Relations, Types, Triggers []string
}

var (
	sqlComment     = regexp.MustCompile(`--[^\n]*`)
	createFunction = regexp.MustCompile(`(?i)\bCREATE\s+OR\s+REPLACE\s+FUNCTION\s+lease\.(\w+)\s*\(`)
	dropFunction   = regexp.MustCompile(`(?i)\bDROP\s+FUNCTION\s+IF\s+EXISTS\s+lease\.(\w+)\s*\(`)
	createRelation = regexp.MustCompile(`(?i)\bCREATE\s+(?:TABLE|SEQUENCE)\s+IF\s+NOT\s+EXISTS\s+lease\.(\w+)`)
	createType     = regexp.MustCompile(`(?i)\bCREATE\s+(?:TYPE|DOMAIN)\s+lease\.(\w+)`)
	createTrigger  = regexp.MustCompile(`(?i)\bCREATE\s+OR\s+REPLACE\s+TRIGGER\s+(\w+)\s[^;]*?\bON\s+lease\.(\w+)`)
)

// createdByFiles is what the migration's files create, read once.
var createdByFiles = sync.OnceValue(readCreated)

// readCreated reads what the migration's files create.
func readCreated() created {
	var c created
	files := append(leasesql.Files(), leasesql.Upgrade(1)...)
	for _, f := range files {
		src := sqlComment.ReplaceAllString(f.SQL, "")
		for _, fn := range []struct {
			re    *regexp.Regexp
			named bool // CREATE names its parameters; DROP lists types only
		}{{createFunction, true}, {dropFunction, false}} {
			for _, m := range fn.re.FindAllStringSubmatchIndex(src, -1) {
				name, args := src[m[2]:m[3]], argTypes(parenthesized(src[m[1]:]), fn.named)
				c.Funcs, c.FuncArgs = append(c.Funcs, name), append(c.FuncArgs, args)
				if !fn.named {
					c.Dropped = append(c.Dropped, name+"("+args+")")
				}
			}
		}
		c.Relations = appendNames(c.Relations, createRelation, src)
		c.Types = appendNames(c.Types, createType, src)
		for _, m := range createTrigger.FindAllStringSubmatch(src, -1) {
			if t := m[1] + " " + m[2]; !slices.Contains(c.Triggers, t) {
				c.Triggers = append(c.Triggers, t)
			}
		}
	}
	return c
}

// appendNames appends the first group of re's matches in src to names, once
// each.
func appendNames(names []string, re *regexp.Regexp, src string) []string {
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// parenthesized returns what s holds before the parenthesis that closes the
// one just before it.
func parenthesized(s string) string {
	depth := 1
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// argTypes returns the types of a function's input parameters, joined by
// commas: without OUT parameters, modes, names (when named) and defaults.
func argTypes(params string, named bool) string {
	var types []string
	for p := range strings.SplitSeq(params, ",") {
		words := strings.Fields(p)
		if len(words) == 0 {
			continue
		}
		switch strings.ToUpper(words[0]) {
		case "OUT":
			continue
		case "IN", "INOUT", "VARIADIC":
			words = words[1:]
		}
		if named {
			words = words[1:]
		}
		if i := slices.IndexFunc(words, func(w string) bool { return strings.EqualFold(w, "DEFAULT") || w == "=" }); i >= 0 {
			words = words[:i]
		}
		types = append(types, strings.Join(words, " "))
	}
	return strings.Join(types, ",")
}
