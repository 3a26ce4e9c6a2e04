-- The audit trail. Append-only three ways: the app role may only INSERT and SELECT; triggers refuse
-- UPDATE, DELETE and TRUNCATE for everyone else; row-level security is forced. None of that stops a
-- superuser, so every row is also hash-chained and MACed, and signed checkpoints are copied outside
-- the database (see src/audit). No patient data: ids, rule names, hashes and byte counts only.

CREATE TABLE audit_events (
  seq             bigint PRIMARY KEY CHECK (seq > 0),   -- gap-free, assigned under the head lock
  event_id        uuid NOT NULL UNIQUE,
  schema_version  smallint NOT NULL,
  recorded_at     text NOT NULL,                        -- UTC ISO-8601 with milliseconds, from the app clock
  event_type      text NOT NULL,
  action          text NOT NULL CHECK (action IN ('C', 'R', 'U', 'D', 'E')),
  outcome         text NOT NULL CHECK (outcome IN ('success', 'denied', 'failed')),
  rule            text,
  reason          text,
  actor_principal text NOT NULL,
  actor_role      text NOT NULL,
  actor_auth      text NOT NULL,
  purpose         text,
  irb_protocol    text,
  run_id          text,
  benchmark_id    text,
  tier            text,
  endpoint_id     text,
  export_id       text,
  approval_id     text,
  address         text,
  detail          jsonb NOT NULL,
  site_id         text NOT NULL,
  host            text NOT NULL,
  daemon_version  text NOT NULL,
  prev_hash       text NOT NULL,   -- row_hash of seq - 1 (64 zeros for seq 1)
  row_hash        text NOT NULL,   -- sha256 of the RFC 8785 canonical JSON of every other field
  mac_key_id      text NOT NULL,
  row_mac         text NOT NULL    -- HMAC-SHA256 of row_hash with a key kept outside the database
);

CREATE INDEX audit_events_by_run ON audit_events (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX audit_events_by_actor ON audit_events (actor_principal);
CREATE INDEX audit_events_by_type ON audit_events (event_type);

-- The chain head: one row, locked FOR UPDATE by every append so concurrent writers cannot fork.
CREATE TABLE audit_head (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  seq       bigint NOT NULL,
  row_hash  text NOT NULL
);
INSERT INTO audit_head (singleton, seq, row_hash) VALUES (true, 0, repeat('0', 64));

-- Signed checkpoints (seq, head hash, time, key fingerprint); the newest is also written to witness files.
CREATE TABLE audit_checkpoints (
  checkpoint_id   bigint PRIMARY KEY,
  seq             bigint NOT NULL,
  head_hash       text NOT NULL,
  signed_at       text NOT NULL,
  key_fingerprint text NOT NULL,
  statement       text NOT NULL,   -- the canonical JSON that was signed
  signature       text NOT NULL    -- base64 Ed25519 signature of statement
);

CREATE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit trail is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE OR DELETE ON audit_checkpoints
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_head_no_delete BEFORE DELETE ON audit_head
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON audit_head
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;
CREATE POLICY audit_events_append ON audit_events FOR INSERT WITH CHECK (true);
CREATE POLICY audit_events_read ON audit_events FOR SELECT USING (true);
ALTER TABLE audit_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY audit_checkpoints_append ON audit_checkpoints FOR INSERT WITH CHECK (true);
CREATE POLICY audit_checkpoints_read ON audit_checkpoints FOR SELECT USING (true);

-- The role the daemon runs as: INSERT and SELECT on the audit tables, nothing more there. Created here
-- when the migrating user may create roles; otherwise deploy/sql/roles.sql creates it first.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolcreaterole)) THEN
      CREATE ROLE ehrbench_app NOLOGIN;
    ELSE
      RAISE NOTICE 'role ehrbench_app does not exist and % cannot create it; run deploy/sql/roles.sql', current_user;
    END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    REVOKE ALL ON audit_events, audit_checkpoints, audit_head FROM PUBLIC;
    REVOKE ALL ON audit_events, audit_checkpoints, audit_head FROM ehrbench_app;
    GRANT INSERT, SELECT ON audit_events, audit_checkpoints TO ehrbench_app;
    GRANT SELECT, UPDATE ON audit_head TO ehrbench_app;
    GRANT SELECT, INSERT, UPDATE ON runs, run_items, run_results TO ehrbench_app;
    GRANT SELECT ON schema_migrations TO ehrbench_app;
  END IF;
END;
$$;
