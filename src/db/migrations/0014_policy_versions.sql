-- The fields of each version of the files read only at start (config.json, site-data.json), as the
-- policy.change event that recorded it summarised them: a fingerprint per field, never a value. The
-- next start compares with them to say which fields changed (`catalog[dataDirs]`,
-- `benchmarks.pubmed_qa[source]`). The event holds the file's sha256 and a digest of these fields,
-- so a row edited here is noticed and not used (src/audit/policy-change.ts). Append-only.
CREATE TABLE policy_versions (
  kind        text NOT NULL,
  sha256      text NOT NULL,
  fields      jsonb NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, sha256)
);

CREATE TRIGGER policy_versions_no_change BEFORE UPDATE OR DELETE ON policy_versions
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER policy_versions_no_truncate BEFORE TRUNCATE ON policy_versions
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT ON policy_versions TO ehrbench_app;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_auditor') THEN
    GRANT SELECT ON policy_versions TO ehrbench_auditor;
  END IF;
END;
$$;
