package data

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ForeignError is a migration refused, with nothing changed, because schema
// lease holds what leasetop did not create, or because code a role below a
// superuser may change would run as the migrating role (an event trigger).
//
// Migrate refuses code it did not create rather than dropping it: an
// operator, a trigger, a rule or a policy in the schema runs as whoever
// uses the lease objects (lease_owner, the functions' callers), so someone
// put it there either to attack or for a reason of their own; either way an
// operator decides, knowing who owns it. What only grants rights (GRANT, a
// default privilege) migrate takes back itself, on every run, and grants
// its own again (sql/roles.sql).
type ForeignError struct {
	// Premade reports a schema lease that no migration made (it has no
	// lease.schema_version), empty or not: migrate adopts no schema it did
	// not create. Owner is then its owner.
	Premade bool
	Owner   string
	// During reports what was made while the migration ran, by code
	// already in the schema (found by the check before its commit).
	During bool
	// Objects names what is there (Premade: everything in the schema;
	// otherwise what leasetop does not create), as PostgreSQL describes
	// it (untrusted text), the first foreignShown of Count.
	Objects []string
	Count   int
}

// foreignShown is how many objects a ForeignError names.
const foreignShown = 5

func (e *ForeignError) Error() string {
	shown := strings.Join(e.Objects, "; ")
	if more := e.Count - len(e.Objects); more > 0 {
		shown += fmt.Sprintf("; and %d more", more)
	}
	if e.Premade {
		what := "empty"
		if e.Count > 0 {
			what = fmt.Sprintf("holding %d objects (%s)", e.Count, shown)
		}
		return fmt.Sprintf("migrate: schema lease exists already, owned by %s and %s, and leasetop did not create it (it has no lease.schema_version): drop it or rename it (ALTER SCHEMA lease RENAME TO ...), then run leasetop migrate again; nothing was changed",
			e.Owner, what)
	}
	made := ""
	if e.During {
		made = ", made while this migration ran by code already in schema lease"
	}
	return fmt.Sprintf("migrate: found what leasetop did not create%s, which would run as the lease roles or as this one (%d: %s): drop it or move it out of schema lease (an event trigger: disable it, or let a superuser own its function), then run leasetop migrate again; nothing was changed",
		made, e.Count, shown)
}

// schemaState reads whether schema lease exists, its owner, and whether it
// has lease.schema_version, which every migration has made (catalog reads:
// the migrating role may not have USAGE on the schema yet).
const schemaState = `
SELECT n.nspowner::regrole::text,
       EXISTS (SELECT FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = 'schema_version')
  FROM pg_namespace n WHERE n.nspname = 'lease'`

// schemaObjects lists every object in schema lease (a relation's row type,
// an array type and an index count with what they belong to).
const schemaObjects = `
WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = 'lease'),
o AS (
    SELECT 'pg_class'::regclass AS cls, c.oid FROM pg_class c, ns
     WHERE c.relnamespace = ns.oid AND c.relkind NOT IN ('i', 'I')
    UNION ALL SELECT 'pg_proc'::regclass, p.oid FROM pg_proc p, ns WHERE p.pronamespace = ns.oid
    UNION ALL SELECT 'pg_type'::regclass, t.oid FROM pg_type t, ns
     WHERE t.typnamespace = ns.oid AND t.typrelid = 0 AND NOT (t.typelem <> 0 AND t.typlen = -1)
    UNION ALL SELECT 'pg_operator'::regclass, x.oid FROM pg_operator x, ns WHERE x.oprnamespace = ns.oid
    UNION ALL SELECT 'pg_opfamily'::regclass, x.oid FROM pg_opfamily x, ns WHERE x.opfnamespace = ns.oid
    UNION ALL SELECT 'pg_collation'::regclass, x.oid FROM pg_collation x, ns WHERE x.collnamespace = ns.oid
    UNION ALL SELECT 'pg_conversion'::regclass, x.oid FROM pg_conversion x, ns WHERE x.connamespace = ns.oid
    UNION ALL SELECT 'pg_ts_config'::regclass, x.oid FROM pg_ts_config x, ns WHERE x.cfgnamespace = ns.oid
    UNION ALL SELECT 'pg_ts_dict'::regclass, x.oid FROM pg_ts_dict x, ns WHERE x.dictnamespace = ns.oid
    UNION ALL SELECT 'pg_statistic_ext'::regclass, x.oid FROM pg_statistic_ext x, ns WHERE x.stxnamespace = ns.oid)
SELECT i.type || ' ' || i.identity FROM o, pg_identify_object(o.cls, o.oid, 0) i ORDER BY 1`

// foreignObjects lists what migrate did not create and refuses to run with
// (see ForeignError): in schema lease, the relations, types and functions
// the files do not create ($1-$5: created), operators and the other kinds
// of object the files never make, triggers on lease relations but the
// files', rules, row-security policies and row security switched on, a
// domain's constraints but the one the files name <domain>_check, and any
// object there that uses a function, operator, type or collation outside
// pg_catalog and lease (a default, a CHECK, an index expression, a
// column's type); and in the whole database, an event trigger whose
// function a role that is not a superuser owns (it may replace it, and it
// would run as the migrating role on migrate's own DDL). Catalog reads
// only, under migrateSettings' search_path.
const foreignObjects = `
WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = 'lease'),
known_funcs AS (
    SELECT f.name || '(' || coalesce((
               SELECT string_agg(coalesce(format_type(CASE WHEN a.t LIKE 'lease.%'
                                                           THEN (SELECT y.oid FROM pg_type y, ns
                                                                  WHERE y.typnamespace = ns.oid AND y.typname = substr(a.t, 7))
                                                           ELSE to_regtype(a.t) END, NULL), '?'), ', ' ORDER BY a.i)
                 FROM unnest(string_to_array(nullif(f.args, ''), ',')) WITH ORDINALITY AS a(t, i)), '') || ')' AS sig
      FROM unnest($1::text[], $2::text[]) AS f(name, args)),
tables AS (
    SELECT c.oid FROM pg_class c, ns
     WHERE c.relnamespace = ns.oid AND c.relkind IN ('r', 'p')
       AND (c.relname = ANY ($3::text[])
            OR (c.relispartition AND EXISTS (SELECT FROM pg_inherits i JOIN pg_class e ON e.oid = i.inhparent
                                              WHERE i.inhrelid = c.oid AND e.relnamespace = ns.oid AND e.relname = 'event')))),
ours AS (
    SELECT oid FROM tables
    UNION ALL
    SELECT c.oid FROM pg_class c, ns
     WHERE c.relnamespace = ns.oid
       AND (   (c.relkind = 'S' AND c.relname = ANY ($3::text[]))
            OR (c.relkind = 'c' AND c.relname = ANY ($4::text[]))
            OR (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d
                                             WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                                               AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                                               AND d.refobjid IN (SELECT oid FROM tables)))
            OR (c.relkind IN ('i', 'I') AND EXISTS (SELECT FROM pg_index x
                                                     WHERE x.indexrelid = c.oid AND x.indrelid IN (SELECT oid FROM tables))))),
rels AS (SELECT c.oid FROM pg_class c, ns WHERE c.relnamespace = ns.oid),
found (cls, oid, note) AS (
    SELECT 'pg_class'::regclass, c.oid, ''
      FROM pg_class c, ns WHERE c.relnamespace = ns.oid AND c.oid NOT IN (SELECT oid FROM ours)
    UNION ALL
    SELECT 'pg_type'::regclass, t.oid, ''
      FROM pg_type t, ns
     WHERE t.typnamespace = ns.oid AND t.typrelid = 0 AND NOT (t.typelem <> 0 AND t.typlen = -1)
       AND NOT (t.typtype = 'd' AND t.typname = ANY ($4::text[]))
    UNION ALL
    SELECT 'pg_proc'::regclass, p.oid, ''
      FROM (SELECT p.oid, p.proname, p.proargtypes FROM pg_proc p, ns WHERE p.pronamespace = ns.oid
            OFFSET 0) p -- the schema's functions first, then their signatures: not every function's
       -- version 4 made the history a partition of a new lease.event: the
       -- row type of event_json's argument went with the old table
     WHERE regexp_replace(p.proname || '(' || oidvectortypes(p.proargtypes) || ')',
                          'lease\.event_until_\d{8}\M', 'lease.event', 'g') NOT IN (SELECT sig FROM known_funcs)
    UNION ALL SELECT 'pg_operator'::regclass, x.oid, '' FROM pg_operator x, ns WHERE x.oprnamespace = ns.oid
    UNION ALL SELECT 'pg_opfamily'::regclass, x.oid, '' FROM pg_opfamily x, ns WHERE x.opfnamespace = ns.oid
    UNION ALL SELECT 'pg_opclass'::regclass, x.oid, '' FROM pg_opclass x, ns WHERE x.opcnamespace = ns.oid
    UNION ALL SELECT 'pg_collation'::regclass, x.oid, '' FROM pg_collation x, ns WHERE x.collnamespace = ns.oid
    UNION ALL SELECT 'pg_conversion'::regclass, x.oid, '' FROM pg_conversion x, ns WHERE x.connamespace = ns.oid
    UNION ALL SELECT 'pg_ts_config'::regclass, x.oid, '' FROM pg_ts_config x, ns WHERE x.cfgnamespace = ns.oid
    UNION ALL SELECT 'pg_ts_dict'::regclass, x.oid, '' FROM pg_ts_dict x, ns WHERE x.dictnamespace = ns.oid
    UNION ALL SELECT 'pg_ts_parser'::regclass, x.oid, '' FROM pg_ts_parser x, ns WHERE x.prsnamespace = ns.oid
    UNION ALL SELECT 'pg_ts_template'::regclass, x.oid, '' FROM pg_ts_template x, ns WHERE x.tmplnamespace = ns.oid
    UNION ALL SELECT 'pg_statistic_ext'::regclass, x.oid, '' FROM pg_statistic_ext x, ns WHERE x.stxnamespace = ns.oid
    UNION ALL
    SELECT CASE WHEN g.tgconstraint <> 0 THEN 'pg_constraint'::regclass ELSE 'pg_trigger'::regclass END,
           CASE WHEN g.tgconstraint <> 0 THEN g.tgconstraint ELSE g.oid END, ''
      FROM pg_trigger g JOIN pg_proc p ON p.oid = g.tgfoid, ns
     WHERE g.tgrelid IN (SELECT oid FROM rels)
       AND (g.tgisinternal OR g.tgname || ' ' || (SELECT c.relname FROM pg_class c WHERE c.oid = g.tgrelid) <> ALL ($5::text[])
            OR p.pronamespace <> ns.oid)
    UNION ALL
    SELECT 'pg_rewrite'::regclass, r.oid, '' FROM pg_rewrite r WHERE r.ev_class IN (SELECT oid FROM rels) AND r.rulename <> '_RETURN'
    UNION ALL
    SELECT 'pg_policy'::regclass, y.oid, '' FROM pg_policy y WHERE y.polrelid IN (SELECT oid FROM rels)
    UNION ALL
    SELECT 'pg_class'::regclass, c.oid, ' with row security on'
      FROM pg_class c, ns WHERE c.relnamespace = ns.oid AND (c.relrowsecurity OR c.relforcerowsecurity)
    UNION ALL
    SELECT 'pg_constraint'::regclass, k.oid, ''
      FROM pg_constraint k JOIN pg_type t ON t.oid = k.contypid, ns
     WHERE t.typnamespace = ns.oid AND k.conname <> t.typname || '_check'
    UNION ALL
    SELECT d.classid, d.objid, ' using ' || ref.type || ' ' || ref.identity
      FROM ns, pg_depend d
      JOIN LATERAL pg_identify_object(d.refclassid, d.refobjid, 0) ref ON true
     WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_type'::regclass, 'pg_collation'::regclass)
       AND ref.schema NOT IN ('pg_catalog', 'lease')
       AND ns.oid = CASE d.classid -- the schema of the object, or of the table it is part of
           WHEN 'pg_class'::regclass THEN (SELECT c.relnamespace FROM pg_class c WHERE c.oid = d.objid)
           WHEN 'pg_type'::regclass THEN (SELECT t.typnamespace FROM pg_type t WHERE t.oid = d.objid)
           WHEN 'pg_proc'::regclass THEN (SELECT p.pronamespace FROM pg_proc p WHERE p.oid = d.objid)
           WHEN 'pg_constraint'::regclass THEN (SELECT k.connamespace FROM pg_constraint k WHERE k.oid = d.objid)
           WHEN 'pg_attrdef'::regclass THEN (SELECT c.relnamespace FROM pg_attrdef a JOIN pg_class c ON c.oid = a.adrelid WHERE a.oid = d.objid)
           WHEN 'pg_trigger'::regclass THEN (SELECT c.relnamespace FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid WHERE g.oid = d.objid)
           WHEN 'pg_policy'::regclass THEN (SELECT c.relnamespace FROM pg_policy y JOIN pg_class c ON c.oid = y.polrelid WHERE y.oid = d.objid)
           WHEN 'pg_rewrite'::regclass THEN (SELECT c.relnamespace FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class WHERE r.oid = d.objid)
           END
    UNION ALL -- after the migration: default privileges planted while it ran (prelude.sql removed the others)
    SELECT 'pg_default_acl'::regclass, d.oid, ''
      FROM pg_default_acl d JOIN pg_namespace n ON n.oid = (SELECT oid FROM ns)
     WHERE $6 AND d.defaclrole = n.nspowner AND d.defaclobjtype <> 'n' AND d.defaclnamespace IN (0, n.oid)
       AND EXISTS (SELECT FROM aclexplode(d.defaclacl) a WHERE a.grantee <> d.defaclrole)
    UNION ALL
    SELECT 'pg_event_trigger'::regclass, e.oid, format(', whose function %s belongs to %s, not a superuser', e.evtfoid::regprocedure, quote_ident(r.rolname))
      FROM pg_event_trigger e JOIN pg_proc p ON p.oid = e.evtfoid JOIN pg_roles r ON r.oid = p.proowner
     WHERE e.evtenabled <> 'D' AND NOT r.rolsuper)
SELECT what FROM (
    SELECT DISTINCT ON (f.cls, f.oid) i.type || ' ' || i.identity || f.note AS what
      FROM found f, pg_identify_object(f.cls, f.oid, 0) i
     ORDER BY f.cls, f.oid, f.note DESC) w -- once each, with what it uses where it uses something
 ORDER BY what`

// refuseForeign returns a *ForeignError when the migration must not run:
// schema lease exists but no migration made it, or it holds what the files
// do not create (foreignObjects). It runs first in the migration's
// transaction, as the migrating role, before anything in the schema can
// run: catalog reads only.
func refuseForeign(ctx context.Context, tx pgx.Tx) error {
	var (
		owner    string
		migrated bool
	)
	err := tx.QueryRow(ctx, schemaState).Scan(&owner, &migrated)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // a new schema: only the event triggers can be in the way
	case err != nil:
		return fmt.Errorf("migrate: %w", translate(err))
	case !migrated:
		e := &ForeignError{Premade: true, Owner: owner}
		if err := e.collect(ctx, tx, schemaObjects); err != nil {
			return err
		}
		return e
	}
	return refuseForeignObjects(ctx, tx, false)
}

// refuseForeignMade is refuseForeign at the end of the migration, before
// its commit: code that ran during it as lease_owner (a CHECK or a default
// of a table the files write, calling a function a file replaces only
// later) may have made what the files do not make, or default privileges
// that would give away the partitions made later.
func refuseForeignMade(ctx context.Context, tx pgx.Tx) error {
	return refuseForeignObjects(ctx, tx, true)
}

// refuseForeignObjects runs foreignObjects (after: with the default
// privileges) and returns a *ForeignError for what it found.
func refuseForeignObjects(ctx context.Context, tx pgx.Tx, after bool) error {
	c := createdByFiles()
	e := &ForeignError{During: after}
	if err := e.collect(ctx, tx, foreignObjects, c.Funcs, c.FuncArgs, c.Relations, c.Types, c.Triggers, after); err != nil {
		return err
	}
	if e.Count > 0 {
		return e
	}
	return nil
}

// collect runs query, whose one column is an object's description, into e.
func (e *ForeignError) collect(ctx context.Context, tx pgx.Tx, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	e.Count = len(found)
	e.Objects = found[:min(len(found), foreignShown)]
	return nil
}
