-- Rating studies (src/ratings): clinicians rate, blinded, a seeded sample of the answers of finished
-- runs of one jury benchmark, so the jury's agreement with them can be measured. An item is opaque: its
-- id is random and a rater's view never carries its run, model, endpoint or benchmark version.
-- Ratings hold only numbers and codes, never free text.

CREATE TABLE rating_studies (
  study_id           uuid PRIMARY KEY,
  title              text NOT NULL CHECK (length(title) BETWEEN 1 AND 120),
  benchmark_id       text NOT NULL,
  run_ids            uuid[] NOT NULL CHECK (cardinality(run_ids) >= 1),
  criteria           jsonb NOT NULL,   -- [{name, min, max}]: the benchmark's jury criteria and scale
  instances_per_run  integer NOT NULL CHECK (instances_per_run > 0),
  raters_per_item    integer NOT NULL CHECK (raters_per_item > 0),
  seed               bigint NOT NULL CHECK (seed >= 0 AND seed < 4294967296),
  tier               text NOT NULL CHECK (tier IN ('public', 'approval-required', 'private')),
  approval_id        uuid REFERENCES approvals (approval_id),   -- the approval every run is bound to (null: public)
  status             text NOT NULL CHECK (status IN ('open', 'closed')),
  opened_by          text NOT NULL,
  opened_at          timestamptz NOT NULL DEFAULT now(),
  closed_by          text,
  closed_at          timestamptz,
  CHECK ((status = 'closed') = (closed_at IS NOT NULL))
);

CREATE INDEX rating_studies_by_time ON rating_studies (opened_at);

-- The sample: one row per (study, run instance). position orders the items of a study (the order they
-- were sampled); a rater sees them in an order of their own (src/ratings/order.ts).
CREATE TABLE rating_items (
  study_id  uuid NOT NULL REFERENCES rating_studies (study_id),
  item_id   uuid NOT NULL,
  position  integer NOT NULL,
  run_id    uuid NOT NULL,
  item_key  text NOT NULL,
  PRIMARY KEY (study_id, item_id),
  UNIQUE (study_id, position),
  UNIQUE (study_id, run_id, item_key),
  FOREIGN KEY (run_id, item_key) REFERENCES run_items (run_id, item_key)
);

CREATE TABLE ratings (
  study_id     uuid NOT NULL,
  item_id      uuid NOT NULL,
  rater        text NOT NULL,
  state        text NOT NULL CHECK (state IN ('rated', 'skipped', 'flagged')),
  scores       jsonb,               -- {criterion: integer}: only when rated
  flag_reason  text CHECK (flag_reason IS NULL OR flag_reason IN ('phi-visible', 'unreadable', 'off-topic', 'not-qualified', 'other')),
  rated_at     timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (study_id, item_id, rater),
  FOREIGN KEY (study_id, item_id) REFERENCES rating_items (study_id, item_id),
  CHECK ((state = 'rated') = (scores IS NOT NULL)),
  CHECK ((state = 'flagged') = (flag_reason IS NOT NULL))
);

CREATE INDEX ratings_by_rater ON ratings (study_id, rater);

-- Items and studies are never removed: a rating's meaning depends on them.
CREATE TRIGGER rating_items_no_change BEFORE UPDATE OR DELETE ON rating_items
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER rating_studies_no_delete BEFORE DELETE ON rating_studies
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON rating_studies TO ehrbench_app;
    GRANT SELECT, INSERT ON rating_items TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE ON ratings TO ehrbench_app;
  END IF;
END;
$$;
