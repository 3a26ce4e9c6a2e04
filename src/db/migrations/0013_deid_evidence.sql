-- A de-identified run's dataset-wide evidence (src/deid/evidence.ts), gathered while the run is planned:
-- the words strong rules took anywhere in the run's data, kept as keyed hashes (HMAC with the site's
-- de-identification secret), never in clear. Its version is also appended to runs.deid_version, so the
-- run, its report and its export say which evidence its prompts were de-identified with.
CREATE TABLE run_deid_evidence (
  run_id     uuid PRIMARY KEY REFERENCES runs (run_id),
  version    text NOT NULL,
  hashes     jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- The app writes and reads it; the auditor's role never reads it (like run_items, it is derived from
-- instance data, even if only as keyed hashes).
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON run_deid_evidence TO ehrbench_app;
  END IF;
END;
$$;
