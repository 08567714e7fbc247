package pgtest

// shadowKit is what the superuser sets up before anything is planted: the
// marker table, the function every shadow calls when it runs, and the
// helpers that plant the shadows and run the positive control.
//
// A shadow may run inside a transaction that is read-only (the monitor's
// snapshot), that rolls back, or that fails because of what the shadow did:
// a mark written in that transaction would be lost. So shadowkit.mark writes
// through dblink, in a transaction of its own on a connection of its own,
// once per shadow, session and generation (shadowkit.settings.gen, which
// Shadows.Ran moves on). In the positive control (shadowkit.control), where
// thousands of shadows run in one session, it records the shadow in that
// session's transaction instead and asks the shadow not to call what it
// stands in for (it returns false): the control's calls pass NULLs, which
// some of pg_catalog's functions refuse.
const shadowKit = `
CREATE SCHEMA shadowkit;
GRANT USAGE ON SCHEMA shadowkit TO PUBLIC;
CREATE EXTENSION dblink SCHEMA shadowkit;
CREATE TABLE shadowkit.settings (dsn text NOT NULL, gen integer NOT NULL);
CREATE TABLE shadowkit.ran (
    n      bigserial PRIMARY KEY,
    shadow integer NOT NULL,
    ran_as text NOT NULL,
    login  text NOT NULL,
    app    text NOT NULL,
    gen    integer NOT NULL
);
CREATE TABLE shadowkit.controlled (shadow integer NOT NULL);

CREATE FUNCTION shadowkit.mark(shadow integer, ran_as name) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    cfg  record;
    key  text;
    seen text := coalesce(current_setting('shadowkit.seen', true), '');
BEGIN
    IF current_setting('shadowkit.control', true) = 'on' THEN
        INSERT INTO shadowkit.controlled (shadow) VALUES (mark.shadow);
        RETURN false;
    END IF;
    SELECT s.dsn, s.gen INTO cfg FROM shadowkit.settings s;
    key := ',' || cfg.gen || ':' || mark.shadow || ',';
    IF strpos(seen, key) > 0 THEN
        RETURN true;
    END IF;
    PERFORM set_config('shadowkit.seen', seen || key, false);
    PERFORM shadowkit.dblink_exec(cfg.dsn, format(
        'INSERT INTO shadowkit.ran (shadow, ran_as, login, app, gen) VALUES (%s, %L, %L, %L, %s)',
        mark.shadow, ran_as, session_user, current_setting('application_name'), cfg.gen));
    RETURN true;
END $$;

-- plant runs each DDL string as the caller, which owns what it makes, and
-- returns those that failed. Unqualified names in the DDL mean pg_catalog's.
CREATE FUNCTION shadowkit.plant(ddl text[]) RETURNS TABLE (i integer, error text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET check_function_bodies = off AS $$
BEGIN
    FOR n IN 1 .. coalesce(array_length(ddl, 1), 0) LOOP
        BEGIN
            EXECUTE ddl[n];
        EXCEPTION WHEN OTHERS THEN
            i := n;
            error := SQLERRM;
            RETURN NEXT;
        END;
    END LOOP;
END $$;

-- control runs each call under the session's own search_path (no SET
-- clause), marking in the session (see mark), and returns those that
-- failed. Its own declarations name their types in full: PL/pgSQL resolves
-- them under the caller's search_path, where text may be a shadow.
CREATE FUNCTION shadowkit.control(calls pg_catalog.text[]) RETURNS TABLE (call pg_catalog.text, error pg_catalog.text)
LANGUAGE plpgsql AS $$
DECLARE
    c pg_catalog.text;
BEGIN
    PERFORM pg_catalog.set_config('shadowkit.control', 'on', true);
    FOREACH c IN ARRAY calls LOOP
        BEGIN
            EXECUTE c;
        EXCEPTION WHEN OTHERS THEN
            call := c;
            error := SQLERRM;
            RETURN NEXT;
        END;
    END LOOP;
END $$;
`
