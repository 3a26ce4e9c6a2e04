-- Grants that running the daemon as its least-privileged login role (deploy/sql/roles.sql) needs:
--  * ehrbench_app recomputes a run's aggregates by replacing its run_results rows (derived data,
--    recomputable from run_items at any time), which needs DELETE there; nowhere else.
--  * ehrbench_auditor reads the audit trail, approvals, revocations, run metadata and aggregates;
--    never run_items, which hold instance payloads and model outputs.
-- Each grant applies only when its role exists (roles.sql creates them; embedded PGlite has neither).
-- deploy/sql/roles.sql grants the auditor's reads too, for databases migrated before the role existed.

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT DELETE ON run_results TO ehrbench_app;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_auditor') THEN
    GRANT SELECT ON audit_events, audit_checkpoints, audit_head, approvals, approval_history,
      revoked_certificates, runs, run_results, schema_migrations TO ehrbench_auditor;
  END IF;
END;
$$;
