-- ehrbench database roles. A psql script: run it once per database before the first
-- "ehrbench db migrate", and again after every migrate, as a superuser or a role with CREATEROLE,
-- connected to the ehrbench database:
--
--   psql "postgres://dba@db.example.internal/ehrbench" -v ON_ERROR_STOP=1 -f deploy/sql/roles.sql
--
-- Roles are cluster-wide: two ehrbench databases on one PostgreSQL cluster must not share them (the
-- app role of one would be the app role of the other). Name each database's roles with psql
-- variables (lower-case identifiers, three different names; defaults in brackets):
--
--   -v owner_role=NAME    [ehrbench_owner]
--   -v app_role=NAME      [ehrbench_app]
--   -v auditor_role=NAME  [ehrbench_auditor]
--
-- e.g. -v owner_role=ehrbench_north_owner -v app_role=ehrbench_north_app -v auditor_role=ehrbench_north_auditor
--
-- Safe to run again (after an upgrade, or to add a role that was missing). The migrations grant the
-- default app and auditor names on the tables they create; this script grants the named roles the
-- same privileges on every table that exists, which is why it runs again after each migrate. It sets
-- no passwords: set them with psql's \password, or use certificate authentication in pg_hba.conf
-- (deploy/README.md).
--
--   owner_role    owns the tables and runs migrations ("ehrbench db migrate"). Used only for
--                 installs and upgrades; the daemon never runs as it.
--   app_role      what the daemon and the workers log in as. Exactly what the app needs: on the audit
--                 tables INSERT and SELECT only (plus moving the chain head), so a compromised app
--                 cannot rewrite or delete audit history.
--   auditor_role  read-only, for compliance tooling: the audit trail, checkpoints, approvals,
--                 revocations, issued certificates, run metadata and aggregate results; never
--                 run_items, which hold instance payloads and model outputs (patient text).
--
-- None of these roles is a superuser, owns other databases, may create roles or bypasses row-level
-- security. What the owner (and any superuser) can still do to the audit tables is detected, not
-- prevented: see the threat model in SECURITY.md.

\if :{?owner_role} \else \set owner_role ehrbench_owner \endif
\if :{?app_role} \else \set app_role ehrbench_app \endif
\if :{?auditor_role} \else \set auditor_role ehrbench_auditor \endif

-- The names as session settings, for the blocks below (psql does not substitute inside $$ ... $$).
SELECT set_config('ehrbench.owner_role', :'owner_role', false) AS owner_role,
       set_config('ehrbench.app_role', :'app_role', false) AS app_role,
       set_config('ehrbench.auditor_role', :'auditor_role', false) AS auditor_role \gset roles_

DO $$
DECLARE
  owner_role text := current_setting('ehrbench.owner_role');
  app_role text := current_setting('ehrbench.app_role');
  auditor_role text := current_setting('ehrbench.auditor_role');
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY[owner_role, app_role, auditor_role] LOOP
    IF r !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
      RAISE EXCEPTION 'roles.sql: role name "%" is not a lower-case identifier (a-z, 0-9, _; at most 63 characters)', r;
    END IF;
  END LOOP;
  IF owner_role IN (app_role, auditor_role) OR app_role = auditor_role THEN
    RAISE EXCEPTION 'roles.sql: owner_role, app_role and auditor_role must be three different roles';
  END IF;
END;
$$;

-- The roles, and whatever existed before under their names: no role of ehrbench may escalate.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY[current_setting('ehrbench.owner_role'), current_setting('ehrbench.app_role'), current_setting('ehrbench.auditor_role')] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', r);
    END IF;
    EXECUTE format('ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', r);
  END LOOP;
END;
$$;

-- The database: only this database's roles connect (and superusers, who always can). The roles of
-- another ehrbench database on the cluster may not.
DO $$
BEGIN
  EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I, %I, %I', current_database(),
    current_setting('ehrbench.owner_role'), current_setting('ehrbench.app_role'), current_setting('ehrbench.auditor_role'));
END;
$$;

-- The schema the migrations create their tables in. Only the owner creates objects; on PostgreSQL
-- before 15 every role could create tables in public, which this closes.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE, CREATE ON SCHEMA public TO :"owner_role";
GRANT USAGE ON SCHEMA public TO :"app_role", :"auditor_role";

-- The app role's privileges on the tables that exist, exactly what the migrations grant the default
-- name (ehrbench_app), table by table, and nothing more: each table's grants are replaced whole.
-- tests/unit/deploy-roles.test.ts keeps this list equal to the migrations'.
DO $$
DECLARE
  app_role text := current_setting('ehrbench.app_role');
  g text[];
BEGIN
  FOREACH g SLICE 1 IN ARRAY ARRAY[
    ['audit_events', 'INSERT, SELECT'],
    ['audit_checkpoints', 'INSERT, SELECT'],
    ['audit_head', 'SELECT, UPDATE'],
    ['runs', 'SELECT, INSERT, UPDATE'],
    ['run_items', 'SELECT, INSERT, UPDATE'],
    ['run_results', 'SELECT, INSERT, UPDATE, DELETE'],
    ['schema_migrations', 'SELECT'],
    ['approvals', 'SELECT, INSERT, UPDATE'],
    ['approval_history', 'SELECT, INSERT'],
    ['revoked_certificates', 'SELECT, INSERT'],
    ['exports', 'SELECT, INSERT, UPDATE'],
    ['export_ledger', 'SELECT, INSERT'],
    ['budget_holds', 'SELECT, INSERT, DELETE'],
    ['endpoint_slots', 'SELECT, INSERT, UPDATE'],
    ['endpoint_workers', 'SELECT, INSERT, UPDATE, DELETE'],
    ['judge_spend', 'SELECT, INSERT'],
    ['issued_certificates', 'SELECT, INSERT'],
    ['run_deid_evidence', 'SELECT, INSERT, UPDATE'],
    ['policy_versions', 'SELECT, INSERT'],
    ['rating_studies', 'SELECT, INSERT, UPDATE'],
    ['rating_items', 'SELECT, INSERT'],
    ['ratings', 'SELECT, INSERT, UPDATE'],
    ['endpoint_fingerprints', 'SELECT, INSERT, UPDATE'],
    ['run_fingerprints', 'SELECT, INSERT, UPDATE'],
    ['canary_baselines', 'SELECT, INSERT, UPDATE, DELETE'],
    ['drift_checks', 'SELECT, INSERT, UPDATE'],
    ['canary_claims', 'SELECT, INSERT, UPDATE']
  ] LOOP
    IF to_regclass(g[1]) IS NOT NULL THEN
      EXECUTE format('REVOKE ALL ON %I FROM %I', g[1], app_role);
      EXECUTE format('GRANT %s ON %I TO %I', g[2], g[1], app_role);
    END IF;
  END LOOP;
END;
$$;

-- The auditor's reads on the tables that exist (the migrations grant the same to the default name on a
-- fresh install; tests/unit/deploy-roles.test.ts keeps the two lists equal).
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['audit_events', 'audit_checkpoints', 'audit_head', 'approvals', 'approval_history',
                           'revoked_certificates', 'runs', 'run_results', 'schema_migrations', 'issued_certificates',
                           'policy_versions', 'endpoint_fingerprints', 'run_fingerprints', 'drift_checks'] LOOP
    IF to_regclass(t) IS NOT NULL THEN
      EXECUTE format('GRANT SELECT ON %I TO %I', t, current_setting('ehrbench.auditor_role'));
    END IF;
  END LOOP;
END;
$$;
