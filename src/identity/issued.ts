/**
 * The issuance record (the `issued_certificates` table, owned here): every client certificate that
 * ehrbench issues, by the sha256 of its DER. The daemon accepts a certificate of a CA ehrbench issues
 * from only when it finds it here for the principal it maps to (a certificate minted with the CA key
 * outside `ehrbench pki issue` has no record), and the recorded issue time, not the validity start the
 * certificate states, decides whether a blanket revocation covers it.
 */
import { X509Certificate } from 'node:crypto';
import type { Queryable } from '../db';
import { certificateFingerprint } from './site-pki';

/** What the record holds of an issued certificate. */
export interface IssuedRecord {
  fingerprint: string;
  issuerFingerprint: string;
  serial: string;
  principal: string;
  issuedAt: Date;
}

/** A certificate about to be handed out: its PEM and the fingerprint of the CA that signed it. */
export interface IssuedCertificate {
  certPem: string;
  issuerFingerprint: string;
}

export class IssuedCertificates {
  constructor(private readonly db: Queryable) {}

  /**
   * Records a certificate as issued now (the database's clock, the one revocations are stamped with).
   * Call it in the transaction of the certificate's pki.issue event, before any file is written.
   * `issuedAt` only for a certificate issued before records were kept: the time of its pki.issue event.
   */
  async record(cert: IssuedCertificate, principal: string, issuedBy: string, issuedAt?: Date): Promise<IssuedRecord> {
    const x509 = new X509Certificate(cert.certPem);
    const rows = await this.db.query<{ issued_at: Date }>(
      `INSERT INTO issued_certificates (fingerprint, issuer_fingerprint, serial, principal, not_before, not_after, issued_by, issued_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now())) RETURNING issued_at`,
      [certificateFingerprint(cert.certPem), cert.issuerFingerprint, x509.serialNumber.toLowerCase(), principal, new Date(x509.validFrom), new Date(x509.validTo), issuedBy, issuedAt ?? null],
    );
    return {
      fingerprint: certificateFingerprint(cert.certPem),
      issuerFingerprint: cert.issuerFingerprint,
      serial: x509.serialNumber.toLowerCase(),
      principal,
      issuedAt: new Date(rows[0]?.issued_at as Date),
    };
  }

  /** Every certificate ehrbench issued, newest first, with its validity end (the console's principals page). */
  async list(): Promise<(IssuedRecord & { notAfter: Date })[]> {
    const rows = await this.db.query<{ fingerprint: string; issuer_fingerprint: string; serial: string; principal: string; issued_at: Date; not_after: Date }>(
      'SELECT fingerprint, issuer_fingerprint, serial, principal, issued_at, not_after FROM issued_certificates ORDER BY issued_at DESC, fingerprint',
    );
    return rows.map((r) => ({
      fingerprint: r.fingerprint,
      issuerFingerprint: r.issuer_fingerprint,
      serial: r.serial,
      principal: r.principal,
      issuedAt: new Date(r.issued_at),
      notAfter: new Date(r.not_after),
    }));
  }

  /** The record of exactly this certificate (by its own fingerprint), if ehrbench issued it. */
  async find(fingerprint: string): Promise<IssuedRecord | undefined> {
    const rows = await this.db.query<{ fingerprint: string; issuer_fingerprint: string; serial: string; principal: string; issued_at: Date }>(
      'SELECT fingerprint, issuer_fingerprint, serial, principal, issued_at FROM issued_certificates WHERE fingerprint = $1',
      [fingerprint],
    );
    const row = rows[0];
    return row && { fingerprint: row.fingerprint, issuerFingerprint: row.issuer_fingerprint, serial: row.serial, principal: row.principal, issuedAt: new Date(row.issued_at) };
  }
}

/** The sha256 fingerprints of every certificate in a PEM file's text (a CA file may hold a bundle). */
export function pemFingerprints(pem: string): string[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(certificateFingerprint);
}
