-- IRB approvals, run approvals and certificate revocations. Approvals change status but are never
-- deleted; every version is kept in approval_history (append-only), so who approved what, when, and
-- what it covered at any moment can always be shown.

CREATE TABLE approvals (
  approval_id            uuid PRIMARY KEY,
  protocol_number        text NOT NULL,
  title                  text,
  principal_investigator text NOT NULL,
  personnel              text[] NOT NULL,        -- principal ids approved to work under the protocol
  benchmarks             text[] NOT NULL,        -- benchmark ids covered (empty: covered by tier)
  tiers                  text[] NOT NULL,        -- tiers covered for any benchmark (empty: only the listed benchmarks)
  endpoints              text[] NOT NULL,        -- endpoint ids approved (empty: any endpoint the tier rules allow)
  purpose                text NOT NULL,
  dua_id                 text,
  budget_usd             double precision CHECK (budget_usd IS NULL OR budget_usd >= 0),
  status                 text NOT NULL CHECK (status IN ('active', 'suspended', 'closed')),
  starts_at              timestamptz NOT NULL,
  expires_at             timestamptz,            -- many minimal-risk protocols have none
  version                integer NOT NULL,
  created_by             text NOT NULL,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_by             text NOT NULL,
  updated_at             timestamptz NOT NULL DEFAULT now(),
  CHECK (expires_at IS NULL OR expires_at > starts_at)
);

CREATE INDEX approvals_by_protocol ON approvals (protocol_number);

CREATE TABLE approval_history (
  approval_id uuid NOT NULL REFERENCES approvals (approval_id),
  version     integer NOT NULL,
  change      text NOT NULL,     -- create, suspend, reinstate, close, narrow
  snapshot    jsonb NOT NULL,    -- the approval as it was after this change
  changed_by  text NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (approval_id, version)
);

CREATE TRIGGER approval_history_no_update BEFORE UPDATE OR DELETE ON approval_history
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER approval_history_no_truncate BEFORE TRUNCATE ON approval_history
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER approvals_no_delete BEFORE DELETE ON approvals
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();

-- Who approved a run (private tier: a compliance officer other than the requester).
ALTER TABLE runs ADD COLUMN approval_id uuid REFERENCES approvals (approval_id);
ALTER TABLE runs ADD COLUMN approved_by text;
ALTER TABLE runs ADD COLUMN approved_at timestamptz;
ALTER TABLE runs ADD CONSTRAINT runs_approver_not_requester CHECK (approved_by IS NULL OR approved_by <> requested_by);

-- Client certificates that are no longer accepted: one by issuer and serial, or (serial '*') every
-- certificate of a principal issued before the revocation.
CREATE TABLE revoked_certificates (
  revocation_id      uuid PRIMARY KEY,
  issuer_fingerprint text NOT NULL,
  serial             text NOT NULL,
  principal          text,
  reason             text NOT NULL,
  revoked_by         text NOT NULL,
  revoked_at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX revoked_certificates_lookup ON revoked_certificates (issuer_fingerprint, serial);

CREATE TRIGGER revoked_certificates_no_delete BEFORE UPDATE OR DELETE ON revoked_certificates
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT, UPDATE ON approvals TO ehrbench_app;
    GRANT SELECT, INSERT ON approval_history, revoked_certificates TO ehrbench_app;
  END IF;
END;
$$;
