-- leasetop: what only the migrating role may do. Runs first, on every migrate,
-- as the role that migrates, with the search_path pinned to pg_catalog (then
-- pg_temp): nothing here resolves a name in a schema that a lower role can
-- write (data/attack_migrate_test.go).
--
-- It creates the schema and the roles, and hands the schema and every object in
-- it to lease_owner: a NOLOGIN role without any attribute. The SECURITY DEFINER
-- functions run as their owner; owned by the migrating role they would run as a
-- superuser whenever migrate ran as one, so any hole in them would hand out
-- superuser. The rest of the migration then runs as lease_owner (SET LOCAL ROLE,
-- data.Migrate): whatever lease_owner could have planted on its own objects (a
-- trigger, a rule, a policy, a default, a replaced function) runs with
-- lease_owner's rights, never the migrating role's. This file reads only the
-- catalogs and changes owners and roles: it fires no code that lease_owner (or
-- anyone but a superuser) can change.
--
-- Where the migrating role cannot create roles (neither superuser nor
-- CREATEROLE) and lease_owner does not exist, it keeps owning what it creates
-- and the whole migration runs as it: then it must not be a superuser
-- (README, Roles).

CREATE SCHEMA IF NOT EXISTS lease;

DO $$
DECLARE
    super boolean;
    createrole boolean;
    owner oid;
    obj text;
BEGIN
    SELECT rolsuper, rolcreaterole INTO super, createrole FROM pg_roles WHERE rolname = current_user;
    -- The groups of the three kinds of client (roles.sql grants them their rights).
    IF to_regrole('lease_reader') IS NULL THEN
        CREATE ROLE lease_reader NOLOGIN;
    END IF;
    IF to_regrole('lease_app') IS NULL THEN
        CREATE ROLE lease_app NOLOGIN;
    END IF;
    IF to_regrole('lease_admin') IS NULL THEN
        CREATE ROLE lease_admin NOLOGIN;
    END IF;
    -- Preempting stops another run's work: a right of its own (preempt.sql).
    IF to_regrole('lease_preempt') IS NULL THEN
        CREATE ROLE lease_preempt NOLOGIN;
    END IF;

    IF to_regrole('lease_owner') IS NULL THEN
        IF NOT (super OR createrole) THEN
            RETURN;
        END IF;
        CREATE ROLE lease_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT pg_has_role(current_user::name, 'lease_owner'::name, 'MEMBER'::text) THEN
        IF NOT createrole THEN
            RETURN;
        END IF;
        EXECUTE format('GRANT lease_owner TO %I', current_user);
    END IF;

    -- A schema that another role created (a superuser's earlier migration) stays
    -- its own when this role may not act as that role: the migration then runs as
    -- this role, as it did before lease_owner owned the schema.
    SELECT nspowner INTO owner FROM pg_namespace WHERE nspname = 'lease';
    IF owner <> 'lease_owner'::regrole THEN
        IF NOT pg_has_role(owner, 'USAGE'::text) THEN
            RETURN;
        END IF;
        ALTER SCHEMA lease OWNER TO lease_owner;
    END IF;
    FOR obj IN
        SELECT format('ALTER %s %s OWNER TO lease_owner',
                      CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.oid::regclass)
          FROM pg_class c
         WHERE c.relnamespace = 'lease'::regnamespace
           AND c.relkind IN ('r', 'p', 'S')
           AND c.relowner <> 'lease_owner'::regrole
           -- an identity sequence moves with its table; tables do not (a
           -- partitioned table depends on itself, a partition on its parent)
           AND (c.relkind <> 'S' OR NOT EXISTS (SELECT FROM pg_depend d
                            WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
        UNION ALL
        SELECT format('ALTER FUNCTION %s OWNER TO lease_owner', p.oid::regprocedure)
          FROM pg_proc p
         WHERE p.pronamespace = 'lease'::regnamespace AND p.proowner <> 'lease_owner'::regrole
        UNION ALL
        SELECT format('ALTER %s %s OWNER TO lease_owner',
                      CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype)
          FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
         WHERE t.typnamespace = 'lease'::regnamespace
           AND (t.typtype = 'd' OR c.relkind = 'c') -- lease.event_kind, lease.grant
           AND t.typowner <> 'lease_owner'::regrole
    LOOP
        EXECUTE obj;
    END LOOP;
END
$$;
