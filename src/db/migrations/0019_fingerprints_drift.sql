-- What endpoints say they served, and drift checks under an approval (issue 32, part 3).
-- Fingerprints are ids only (model, system_fingerprint, deployment, api-version, allowlisted headers,
-- the sha256 of GET /v1/models): never content. Aggregated, not one row per call.

CREATE TABLE endpoint_fingerprints (
  endpoint_id  text NOT NULL,
  fingerprint  text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),   -- sha256 of `served`
  served       jsonb NOT NULL,
  first_seen   timestamptz NOT NULL DEFAULT now(),
  last_seen    timestamptz NOT NULL DEFAULT now(),
  calls        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (endpoint_id, fingerprint)
);

-- The fingerprints a run's calls saw (model and judges), for its results. No foreign key to runs: the
-- gateway counts what it is given, and a call's count must not depend on the run's row (tests, probes).
CREATE TABLE run_fingerprints (
  run_id       uuid NOT NULL,
  endpoint_id  text NOT NULL,
  fingerprint  text NOT NULL,
  first_seen   timestamptz NOT NULL DEFAULT now(),
  last_seen    timestamptz NOT NULL DEFAULT now(),
  calls        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, endpoint_id, fingerprint),
  FOREIGN KEY (endpoint_id, fingerprint) REFERENCES endpoint_fingerprints (endpoint_id, fingerprint)
);

-- An approval's canary, named by compliance: {benchmarkId, instances, everyDays, threshold, minDifference}.
ALTER TABLE approvals ADD COLUMN canary jsonb;

-- A canary baseline per (approval, endpoint): its run and the instance keys it scored (the pinned sample).
CREATE TABLE canary_baselines (
  approval_id    uuid NOT NULL REFERENCES approvals (approval_id),
  endpoint_id    text NOT NULL,
  run_id         uuid NOT NULL REFERENCES runs (run_id),
  instance_keys  text[],            -- set when the baseline run has completed
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (approval_id, endpoint_id)
);

-- Each canary re-run and its comparison with the baseline. `state`: pending (run requested), stable,
-- drift (stales the approval's results until reviewed), inconclusive (too few pairs), failed (the run).
CREATE TABLE drift_checks (
  check_id         uuid PRIMARY KEY,
  approval_id      uuid NOT NULL REFERENCES approvals (approval_id),
  endpoint_id      text NOT NULL,
  run_id           uuid NOT NULL REFERENCES runs (run_id),
  baseline_run_id  uuid NOT NULL REFERENCES runs (run_id),
  trigger          text NOT NULL CHECK (trigger IN ('schedule', 'fingerprint')),
  state            text NOT NULL CHECK (state IN ('pending', 'stable', 'drift', 'inconclusive', 'failed')),
  test             text CHECK (test IS NULL OR test IN ('mcnemar-exact', 'wilcoxon-signed-rank')),
  pairs            integer,
  baseline_mean    double precision,
  canary_mean      double precision,
  p_value          double precision,
  created_at       timestamptz NOT NULL DEFAULT now(),
  decided_at       timestamptz,
  reviewed_by      text,
  reviewed_at      timestamptz,
  review_note      text CHECK (review_note IS NULL OR length(review_note) <= 300)
);

CREATE INDEX drift_checks_by_approval ON drift_checks (approval_id, created_at);

-- Who is starting a canary run of (approval, endpoint) right now: daemons and workers sharing a store
-- all look at the canaries; only the one holding the claim requests the run.
CREATE TABLE canary_claims (
  approval_id  uuid NOT NULL REFERENCES approvals (approval_id),
  endpoint_id  text NOT NULL,
  until        timestamptz NOT NULL,
  PRIMARY KEY (approval_id, endpoint_id)
);

-- The app writes all five (a baseline whose run failed is deleted, to be run again); the auditor reads
-- the fingerprints and the checks, not the baselines' instance keys.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON endpoint_fingerprints TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE ON run_fingerprints TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE, DELETE ON canary_baselines TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE ON drift_checks TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE ON canary_claims TO ehrbench_app;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_auditor') THEN
    GRANT SELECT ON endpoint_fingerprints TO ehrbench_auditor;
    GRANT SELECT ON run_fingerprints TO ehrbench_auditor;
    GRANT SELECT ON drift_checks TO ehrbench_auditor;
  END IF;
END;
$$;
