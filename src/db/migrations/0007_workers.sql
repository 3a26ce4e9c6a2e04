-- Several worker processes on one database: one of them plans a run (a lease, taken over if its
-- holder dies), and an endpoint's capacity (model calls in flight) is shared among all of them
-- through slot leases that each worker renews while it works and gives back when it stops.

ALTER TABLE runs ADD COLUMN planner text;
ALTER TABLE runs ADD COLUMN planner_expires_at timestamptz;

CREATE TABLE endpoint_slots (
  endpoint_id text NOT NULL,
  slot_no     integer NOT NULL CHECK (slot_no >= 0),
  holder      text,
  expires_at  timestamptz,
  PRIMARY KEY (endpoint_id, slot_no)
);

-- Workers currently wanting calls to an endpoint, so that each can take its fair share of slots.
CREATE TABLE endpoint_workers (
  endpoint_id text NOT NULL,
  worker_id   text NOT NULL,
  seen_at     timestamptz NOT NULL,
  PRIMARY KEY (endpoint_id, worker_id)
);

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON endpoint_slots TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE, DELETE ON endpoint_workers TO ehrbench_app;
  END IF;
END;
$$;
