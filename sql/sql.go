// Package sql holds leasetop's SQL: the schema, the functions that are the
// only write path, the NOTIFY triggers and the roles, embedded so the binary
// can migrate a database by itself.
//
// The files are applied in the order of Files, in one transaction, by
// data.Migrate. Every statement is idempotent: applying them again leaves the
// database as it was, apart from recreating the functions and triggers.
//
// # One file per contract
//
// schema.sql holds the tables; runid.sql the public run id (run ids are
// capabilities); checks.sql the input checks; failover.sql the floor that
// keeps fences and event ids from repeating across a failover; fence.sql
// the fence race and the fence check; acquire.sql, renew.sql and
// release.sql the calls; history.sql the event rows' payload and
// retention; limits.sql the accounts' limits and their slots; preempt.sql, queue.sql and handover.sql the busy strategies;
// partition.sql the history's partitions; notify.sql the notification
// after the commit and the SQL callers' side of it; triggers.sql the
// triggers that record every ownership change; roles.sql the grants.
//
// # Conventions
//
// Every function samples clock_timestamp() once and uses that instant for
// every comparison and timestamp it writes, so one call sees one "now" on
// the database clock. Functions are SECURITY DEFINER with a pinned
// search_path; callers need only EXECUTE (roles.sql). lock_timeout bounds how
// long a call can wait behind another transaction that holds the row.
//
// Every entry point also sets enable_seqscan off, so that its lookups by key
// use the key index whatever the statistics say. Sessions come and go: the
// tables keep a few live rows while their key index grew with every session
// they ever held, and PostgreSQL's estimate for one key through such an index
// (its pages over its few tuples) comes out above a scan of the whole heap,
// dead rows included. It then read the table on every call: 165 pages per
// acquire and per release in a long bench database, about a tenth of a
// cycle's server CPU (internal/data/churned_plan_test.go). No lookup here wants a
// sequential scan.
//
// Every search_path ends in pg_temp. Unless it is listed, PostgreSQL searches
// the caller's temporary schema *first* for types and relations, so a caller
// could shadow text or timestamptz with a domain whose CHECK runs as the
// function's owner (internal/data/attack_pgtemp_test.go).
package sql

import "embed"

// Version is the schema version these files create. Migrate records it in
// lease.schema_version; every other command refuses to run against a database
// whose recorded version differs. Version 7 is the schema of one file per
// contract above, with the busy strategies' edges, the queue's owners, the
// migration's hardening and the conversations' inbox (inbox.sql: messages
// to a conversation, delivered to whichever run holds it); a database at
// version 1 to 6 migrates in place (version 1 through Upgrade(1)). What
// each version changed, and what a database at an older one needs, is in
// CHANGELOG.md.
//
// Version 7 also makes the cycle leaner (lease.acquire and lease.release
// write their acquired and released events themselves and the trigger
// leaves those rows to them, by lease.op) and adds limits
// (lease.account_limit and lease.limit_slot hold at most N live runs per
// account and per pool within it, a slot held by its session's unexpired
// lease: limits.sql; renewals decide on the clock after a lock wait).
const Version = 7

//go:embed *.sql
var files embed.FS

// Files returns the migration's SQL files in the order they must run.
func Files() []File {
	return []File{
		read("prelude.sql", false),
		read("schema.sql", true),
		read("runid.sql", true),
		read("checks.sql", true),
		read("failover.sql", true),
		read("fence.sql", true),
		read("history.sql", true),
		read("limits.sql", true),
		read("acquire.sql", true),
		read("renew.sql", true),
		read("release.sql", true),
		read("preempt.sql", true),
		read("queue.sql", true),
		read("handover.sql", true),
		read("inbox.sql", true),
		read("partition.sql", true),
		read("notify.sql", true),
		read("triggers.sql", true),
		read("roles.sql", true),
		read("members.sql", false),
	}
}

// Upgrade returns the one-time steps for a database found at version from,
// to run after Files in the same transaction: they convert data that the
// idempotent files cannot (version 1's run ids). None for a new database or
// one already at Version.
func Upgrade(from int) []File {
	if from == 1 {
		return []File{read("upgrade_1.sql", true)}
	}
	return nil
}

func read(name string, asOwner bool) File {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("sql: embedded file missing: " + name) // a build defect, not a runtime condition
	}
	return File{Name: name, SQL: string(b), AsOwner: asOwner}
}

// File is one embedded SQL file.
type File struct {
	Name string
	SQL  string
	// AsOwner says the file runs as the lease objects' owner (lease_owner),
	// not as the migrating role: it writes objects that lease_owner could
	// have changed, so whatever it fires must not run with more rights than
	// lease_owner's. The others (prelude.sql, members.sql) create roles and
	// hand out ownership, which only the migrating role may do, and touch no
	// object of the schema in a way that runs code.
	AsOwner bool
}
