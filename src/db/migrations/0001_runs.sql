-- Runs and their instances: the run store. Instance payloads, predictions and scores live only here
-- (they may carry patient text); nothing in these tables is ever exported row by row.

CREATE TABLE runs (
  run_id            uuid PRIMARY KEY,
  benchmark_id      text NOT NULL,
  benchmark_version text NOT NULL,
  benchmark_hash    text NOT NULL,   -- sha256 of the canonical benchmark definition
  template_hash     text NOT NULL,   -- sha256 of the prompt template
  tier              text NOT NULL CHECK (tier IN ('public', 'approval-required', 'private')),
  endpoint_id       text NOT NULL,
  status            text NOT NULL CHECK (status IN ('requested', 'approved', 'running', 'completed', 'failed', 'cancelled', 'halted')),
  requested_by      text NOT NULL,
  max_instances     integer CHECK (max_instances IS NULL OR max_instances > 0),
  instance_count    integer,         -- set once planning has enqueued every instance
  deid_version      text,            -- hash of the de-identification configuration, when it applied
  spec              jsonb NOT NULL,  -- what ran: definition, endpoint, settings (no data)
  error_code        text,            -- why a run failed or halted: a code, never text from data
  created_at        timestamptz NOT NULL DEFAULT now(),
  started_at        timestamptz,
  finished_at       timestamptz
);

CREATE INDEX runs_by_status ON runs (status, created_at);

-- One row per (run, instance): the work queue and the per-instance result in one place, so a result
-- is written exactly once (the primary key) and a restarted run claims only what is unfinished.
CREATE TABLE run_items (
  run_id            uuid NOT NULL REFERENCES runs (run_id),
  item_key          text NOT NULL,
  ordinal           integer NOT NULL,
  payload           jsonb NOT NULL,
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimed', 'done', 'blocked', 'failed')),
  attempts          integer NOT NULL DEFAULT 0,
  lease_owner       text,
  lease_expires_at  timestamptz,
  prediction        text,
  scores            jsonb,
  prompt_tokens     integer,
  completion_tokens integer,
  latency_ms        integer,
  outcome_rule      text,            -- blocked or failed: the rule or error code that decided
  finished_at       timestamptz,
  PRIMARY KEY (run_id, item_key)
);

CREATE INDEX run_items_claim ON run_items (run_id, state, ordinal);

-- Aggregates derived from run_items when a run completes; recomputable at any time.
CREATE TABLE run_results (
  run_id  uuid NOT NULL REFERENCES runs (run_id),
  metric  text NOT NULL,
  value   double precision,
  n       integer NOT NULL,
  PRIMARY KEY (run_id, metric)
);
