-- Tokens of the LLM-jury judge calls of a run (src/calls/budget.ts). A model call's tokens are stored
-- with its instance (run_items); a judge call has no row of its own, so its spend is kept here and
-- counts against the run's approval budget like the model's. Numbers only: no prompt, no answer.
CREATE TABLE judge_spend (
  spend_id          uuid PRIMARY KEY,
  run_id            uuid NOT NULL,
  approval_id       uuid REFERENCES approvals (approval_id),
  endpoint_id       text NOT NULL,
  model             text,
  deployment        text,
  prompt_tokens     integer NOT NULL CHECK (prompt_tokens >= 0),
  completion_tokens integer NOT NULL CHECK (completion_tokens >= 0),
  created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX judge_spend_by_approval ON judge_spend (approval_id);
CREATE INDEX judge_spend_by_run ON judge_spend (run_id);

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT ON judge_spend TO ehrbench_app;
  END IF;
END;
$$;
