-- Aggregate-only exports, the ledger of released cohorts, and budget holds of calls in flight.

-- One row per export request. `content` is the preview a compliance officer reviews: canonical JSON of
-- aggregates after disclosure control, never instance data. Once released, the signed bundle is kept
-- here too (so it can be downloaded again) and the row can no longer change.
CREATE TABLE exports (
  export_id      uuid PRIMARY KEY,
  state          text NOT NULL CHECK (state IN ('requested', 'released')),
  requested_by   text NOT NULL,
  requested_at   timestamptz NOT NULL DEFAULT now(),
  run_ids        uuid[] NOT NULL,
  content        text NOT NULL,
  content_sha256 text NOT NULL,
  released_by    text,
  released_at    timestamptz,
  format         text CHECK (format IS NULL OR format IN ('bundle', 'helm')),
  bundle         text,             -- the signed bundle, byte for byte as written
  bundle_sha256  text,
  helm_files     jsonb,            -- HELM run_spec.json / stats.json texts, for --format helm
  CHECK (released_by IS NULL OR released_by <> requested_by),
  CHECK ((state = 'released') = (bundle IS NOT NULL AND released_by IS NOT NULL))
);

CREATE INDEX exports_by_requester ON exports (requested_by, requested_at);

-- A released export is final: its bundle is what left the hospital.
CREATE FUNCTION export_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.state = 'released' THEN
    RAISE EXCEPTION 'a released export is final: % on % refused', TG_OP, TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER exports_final BEFORE UPDATE OR DELETE ON exports
  FOR EACH ROW EXECUTE FUNCTION export_refuse_change();
CREATE TRIGGER exports_no_truncate BEFORE TRUNCATE ON exports
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

-- The ledger of released cohorts, for the differencing check: for every released run and every
-- released cell of it (the whole cohort '' or one subgroup cell), the sha256 of each contributing
-- instance key. The hashes live only here; they are never part of a bundle. Append-only.
CREATE TABLE export_ledger (
  export_id    uuid NOT NULL REFERENCES exports (export_id),
  run_id       uuid NOT NULL,
  benchmark_id text NOT NULL,
  cell         text NOT NULL,
  key_hash     text NOT NULL,
  PRIMARY KEY (export_id, run_id, cell, key_hash)
);

CREATE INDEX export_ledger_by_cell ON export_ledger (benchmark_id, cell, key_hash);

CREATE TRIGGER export_ledger_no_update BEFORE UPDATE OR DELETE ON export_ledger
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER export_ledger_no_truncate BEFORE TRUNCATE ON export_ledger
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

-- Worst-case costs of model calls in flight under a budgeted approval (src/runs/budget.ts). Deleted
-- when the call's tokens are stored; a hold of a worker that died expires.
CREATE TABLE budget_holds (
  hold_id     uuid PRIMARY KEY,
  approval_id uuid NOT NULL REFERENCES approvals (approval_id),
  run_id      uuid NOT NULL,
  usd         double precision NOT NULL CHECK (usd >= 0),
  expires_at  timestamptz NOT NULL
);

CREATE INDEX budget_holds_by_approval ON budget_holds (approval_id, expires_at);

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON exports TO ehrbench_app;
    GRANT SELECT, INSERT ON export_ledger TO ehrbench_app;
    GRANT SELECT, INSERT, DELETE ON budget_holds TO ehrbench_app;
  END IF;
END;
$$;
