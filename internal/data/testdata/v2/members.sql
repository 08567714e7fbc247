-- leasetop: the lease groups' memberships (lease_admin ⊃ lease_app ⊃ lease_reader).
-- Runs last, as the migrating role, with the search_path pinned to pg_catalog.
--
-- Memberships are granted only where missing: granting needs CREATEROLE (or
-- ADMIN on the role), which a later migration by the objects' owner may lack.
-- The arguments are typed: with untyped literals a public.pg_has_role(text,
-- text, text) would be a better match than pg_catalog's, were public searched.
DO $$
BEGIN
    IF NOT pg_has_role('lease_app'::name, 'lease_reader'::name, 'MEMBER'::text) THEN
        GRANT lease_reader TO lease_app;
    END IF;
    IF NOT pg_has_role('lease_admin'::name, 'lease_app'::name, 'MEMBER'::text) THEN
        GRANT lease_app TO lease_admin;
    END IF;
END
$$;
