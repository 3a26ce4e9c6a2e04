-- Every client certificate ehrbench issues (src/identity/issued.ts). The daemon accepts a certificate
-- of a CA ehrbench issues from only when it is recorded here, byte for byte (its sha256), and a
-- blanket revocation stops the certificates of the principal recorded before it: the issue time is
-- what counts, not the validity start written into the certificate (which may lie in the future).
-- Append-only: a record is never changed or removed; revocation is a row of revoked_certificates.
CREATE TABLE issued_certificates (
  fingerprint        text PRIMARY KEY,            -- sha256 of the certificate's DER, lower-case hex
  issuer_fingerprint text NOT NULL,               -- sha256 of the issuing CA certificate
  serial             text NOT NULL,               -- lower-case hex
  principal          text NOT NULL,               -- the certificate's common name
  not_before         timestamptz NOT NULL,
  not_after          timestamptz NOT NULL,
  issued_by          text NOT NULL,               -- who issued it (e.g. local:<os user>)
  issued_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (issuer_fingerprint, serial)
);

CREATE TRIGGER issued_certificates_no_change BEFORE UPDATE OR DELETE ON issued_certificates
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER issued_certificates_no_truncate BEFORE TRUNCATE ON issued_certificates
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_app') THEN
    GRANT SELECT, INSERT ON issued_certificates TO ehrbench_app;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ehrbench_auditor') THEN
    GRANT SELECT ON issued_certificates TO ehrbench_auditor;
  END IF;
END;
$$;
