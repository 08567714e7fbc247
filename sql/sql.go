// Package sql holds leasetop's SQL: the schema, the functions that are the
// only write path, the NOTIFY triggers and the roles, embedded so the binary
// can migrate a database by itself.
//
// The files are applied in the order of Files, in one transaction, by
// data.Migrate. Every statement is idempotent: applying them again leaves the
// database as it was, apart from recreating the functions and triggers.
package sql

import "embed"

// Version is the schema version these files create. Migrate records it in
// lease.schema_version; every other command refuses to run against a database
// whose recorded version differs.
//
// Version 2: every function's search_path lists pg_temp last, so a caller's
// temporary schema can no longer shadow the types the SECURITY DEFINER
// functions use. Databases at version 1 must be migrated.
const Version = 2

//go:embed *.sql
var files embed.FS

// Files returns the migration's SQL files in the order they must run.
func Files() []File {
	names := []string{"schema.sql", "functions.sql", "triggers.sql", "roles.sql"}
	out := make([]File, len(names))
	for i, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			panic("sql: embedded file missing: " + name) // a build defect, not a runtime condition
		}
		out[i] = File{Name: name, SQL: string(b)}
	}
	return out
}

// File is one embedded SQL file.
type File struct {
	Name string
	SQL  string
}
