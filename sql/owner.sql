-- leasetop: who owns the lease objects. Runs last, on every migrate.
--
-- The SECURITY DEFINER functions run as the owner of the objects. Owned by the
-- migrating role, they would run as a superuser whenever migrate ran as one, so
-- any hole in them would hand out superuser. So where the migrating role may
-- (superuser, or CREATEROLE), a dedicated NOLOGIN role without any other
-- attribute, lease_owner, owns every table, sequence, type and function in
-- schema lease, and the migrating role becomes a member of it (to migrate again
-- later). Otherwise the migrating role keeps owning what it created: then it
-- must not be a superuser (README, Roles).
DO $$
DECLARE
    super boolean;
    createrole boolean;
    obj text;
BEGIN
    SELECT rolsuper, rolcreaterole INTO super, createrole FROM pg_roles WHERE rolname = current_user;
    IF to_regrole('lease_owner') IS NULL THEN
        IF NOT (super OR createrole) THEN
            RETURN;
        END IF;
        CREATE ROLE lease_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
    END IF;
    IF NOT pg_has_role('lease_owner', 'MEMBER') THEN
        IF NOT createrole THEN
            RETURN;
        END IF;
        EXECUTE format('GRANT lease_owner TO %I', current_user);
    END IF;

    GRANT USAGE, CREATE ON SCHEMA lease TO lease_owner;
    FOR obj IN
        SELECT format('ALTER %s %s OWNER TO lease_owner',
                      CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.oid::regclass)
          FROM pg_class c
         WHERE c.relnamespace = 'lease'::regnamespace
           AND c.relkind IN ('r', 'p', 'S')
           AND c.relowner <> 'lease_owner'::regrole
           -- an identity sequence moves with its table
           AND NOT EXISTS (SELECT FROM pg_depend d
                            WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
        UNION ALL
        SELECT format('ALTER FUNCTION %s OWNER TO lease_owner', p.oid::regprocedure)
          FROM pg_proc p
         WHERE p.pronamespace = 'lease'::regnamespace AND p.proowner <> 'lease_owner'::regrole
        UNION ALL
        SELECT format('ALTER TYPE %s OWNER TO lease_owner', t.oid::regtype)
          FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid
         WHERE t.typnamespace = 'lease'::regnamespace AND c.relkind = 'c' -- lease.grant
           AND t.typowner <> 'lease_owner'::regrole
    LOOP
        EXECUTE obj;
    END LOOP;
END
$$;
