/**
 * Certificate revocations (the `revoked_certificates` table, owned here): a blanket revocation of a
 * principal stops every certificate of theirs issued before it, at once. "Issued" is the issue time
 * ehrbench recorded (src/identity/issued.ts), never the validity start a certificate states: that one
 * can be set in the future, and a certificate issued before the revocation would then outlive it.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db';
import { appendRevocation, type LedgerEntry } from './revocation-ledger';

/** What the server knows of a client certificate. */
export interface RevocationSubject {
  issuerFingerprint: string;
  serial: string;
  /**
   * When it was issued: the recorded issue time for a certificate ehrbench issued; for one of a CA the
   * site declares external, its validity start (the only date ehrbench has of it).
   */
  issuedAt: Date;
}

export class Revocations {
  constructor(private readonly db: Queryable) {}

  /**
   * True when the certificate, or every certificate of the principal issued until a blanket revocation,
   * is revoked. Issued at the very instant of the revocation counts as before it (fail closed).
   */
  async isRevoked(cert: RevocationSubject, principalId: string): Promise<boolean> {
    const rows = await this.db.query(
      `SELECT 1 FROM revoked_certificates
        WHERE issuer_fingerprint = $1 AND (serial = $2 OR (serial = '*' AND principal = $3 AND revoked_at >= $4))
        LIMIT 1`,
      [cert.issuerFingerprint, cert.serial, principalId, cert.issuedAt],
    );
    return rows.length > 0;
  }

  /**
   * The first blanket revocation of the principal at or after `since`, if any: a run requested at
   * `since` was requested with a certificate it revokes (one issued later cannot have made it).
   */
  async blanketSince(principalId: string, since: Date): Promise<{ revokedAt: Date; revokedBy: string } | undefined> {
    const rows = await this.db.query<{ revoked_at: Date; revoked_by: string }>(
      `SELECT revoked_at, revoked_by FROM revoked_certificates WHERE serial = '*' AND principal = $1 AND revoked_at >= $2 ORDER BY revoked_at LIMIT 1`,
      [principalId, since],
    );
    const row = rows[0];
    return row ? { revokedAt: new Date(row.revoked_at), revokedBy: row.revoked_by } : undefined;
  }

  /**
   * Every certificate of the principal from this issuer, issued until now. Written first to the
   * ledgers outside the store (`ledgerDirs`: the witness folders), so that a restore of an older
   * backup cannot bring the certificates back (src/identity/revocation-ledger.ts).
   */
  async revokeAll(issuerFingerprint: string, principalId: string, reason: string, revokedBy: string, ledgerDirs: string[]): Promise<void> {
    const entry: LedgerEntry = { revocationId: randomUUID(), issuerFingerprint, serial: '*', principal: principalId, reason, revokedBy, revokedAt: new Date().toISOString() };
    appendRevocation(ledgerDirs, entry);
    await this.insert(entry);
  }

  /** A revocation of the ledger the store lost (a restore), put back as it was. */
  async reinstate(entry: LedgerEntry): Promise<void> {
    await this.insert(entry);
  }

  private async insert(e: LedgerEntry): Promise<void> {
    await this.db.query(
      `INSERT INTO revoked_certificates (revocation_id, issuer_fingerprint, serial, principal, reason, revoked_by, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (revocation_id) DO NOTHING`,
      [e.revocationId, e.issuerFingerprint, e.serial, e.principal === '' ? null : e.principal, e.reason, e.revokedBy, e.revokedAt],
    );
  }
}
