-- ehrbench database roles. Run once per database, before the first "ehrbench db migrate", as a
-- superuser or a role with CREATEROLE, connected to the ehrbench database:
--
--   psql "postgres://dba@db.example.internal/ehrbench" -v ON_ERROR_STOP=1 -f deploy/sql/roles.sql
--
-- Safe to run again (after an upgrade, or to add a role that was missing). It sets no passwords:
-- set them with psql's \password, or use certificate authentication in pg_hba.conf (deploy/README.md).
--
--   ehrbench_owner    owns the tables and runs migrations ("ehrbench db migrate"). Used only for
--                     installs and upgrades; the daemon never runs as it.
--   ehrbench_app      what the daemon and the workers log in as. The migrations grant it exactly
--                     what the app needs: on the audit tables INSERT and SELECT only (plus moving the
--                     chain head), so a compromised app cannot rewrite or delete audit history.
--   ehrbench_auditor  read-only, for compliance tooling: the audit trail, checkpoints, approvals,
--                     revocations, run metadata and aggregate results; never run_items, which hold
--                     instance payloads and model outputs (patient text).
--
-- None of these roles is a superuser, owns other databases, may create roles or bypasses row-level
-- security. What the owner (and any superuser) can still do to the audit tables is detected, not
-- prevented: see the threat model in SECURITY.md.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_owner') THEN
    CREATE ROLE ehrbench_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
  -- Migration 0002 creates ehrbench_app NOLOGIN when the migrating user may create roles; here it
  -- becomes the daemon's login role either way.
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    CREATE ROLE ehrbench_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_auditor') THEN
    CREATE ROLE ehrbench_auditor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
END;
$$;

-- Whatever existed before: no role of ehrbench may escalate.
ALTER ROLE ehrbench_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE ehrbench_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE ehrbench_auditor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

-- The database: only ehrbench's roles connect (and superusers, who always can).
DO $$
BEGIN
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO ehrbench_owner, ehrbench_app, ehrbench_auditor', current_database());
END;
$$;

-- The schema the migrations create their tables in. Only the owner creates objects; on PostgreSQL
-- before 15 every role could create tables in public, which this closes.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO ehrbench_owner;
GRANT USAGE ON SCHEMA public TO ehrbench_app, ehrbench_auditor;

-- The auditor's reads on tables that already exist (a database migrated before this role existed).
-- Migration 0006 grants the same on a fresh install; the two lists are kept equal by
-- tests/unit/deploy-roles.test.ts.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['audit_events', 'audit_checkpoints', 'audit_head', 'approvals', 'approval_history',
                           'revoked_certificates', 'runs', 'run_results', 'schema_migrations'] LOOP
    IF to_regclass(t) IS NOT NULL THEN
      EXECUTE format('GRANT SELECT ON %I TO ehrbench_auditor', t);
    END IF;
  END LOOP;
END;
$$;
