/**
 * Who is calling: the client certificate the TLS handshake verified (against the configured client
 * CAs only), mapped to a principal by its common name and the fingerprint of the CA that issued it,
 * known to ehrbench by its issuance record, and refused if revoked. No certificate, an unknown one,
 * one ehrbench did not issue or a revoked one: no principal, no access.
 *
 * Only CAs the site declares external (server.externalClientCaFiles: the hospital's own PKI) issue
 * outside ehrbench; their certificates need no record, and a blanket revocation covers those whose
 * validity starts before it. Every other trusted CA is taken to be one ehrbench issues from, so a
 * certificate of it without a record is refused: deny by default, whichever file the CA came from.
 */
import { commandPrefix } from '../command-prefix';
import type { TLSSocket } from 'node:tls';
import type { App } from '../app';
import type { Queryable } from '../db';
import { IssuedCertificates, Revocations } from '../identity';
import type { Principal } from '../access';
import type { RuleId } from '../policy';

export interface PeerIdentity {
  commonName: string;
  issuerFingerprint: string;
  serial: string;
  notBefore: Date;
  /** sha256 of the presented certificate itself: how its issuance record and the rate limit know it. */
  fingerprint: string;
}

export interface IdentifyOptions {
  /** Fingerprints of the CAs declared external (server.externalClientCaFiles). */
  externalIssuers: ReadonlySet<string>;
}

/**
 * A refusal names the principal the certificate maps to when there is one (its certificate unrecorded
 * or revoked): the trail then says whose certificate was refused, not the daemon.
 */
export type IdentityResult = { ok: true; principal: Principal; peer: PeerIdentity } | { ok: false; rule: RuleId; reason: string; peer?: PeerIdentity; principal?: Principal };

/** "AB:CD:..." -> "abcd..." */
export function normalizeFingerprint(fp: string): string {
  return fp.replace(/:/g, '').toLowerCase();
}

export function peerIdentity(socket: TLSSocket): PeerIdentity | undefined {
  if (!socket.authorized) return undefined;
  const cert = socket.getPeerCertificate(true);
  if (!cert || !cert.subject || !cert.issuerCertificate) return undefined;
  const cn = Array.isArray(cert.subject.CN) ? cert.subject.CN[0] : cert.subject.CN;
  if (!cn) return undefined;
  return {
    commonName: cn,
    issuerFingerprint: normalizeFingerprint(cert.issuerCertificate.fingerprint256),
    serial: cert.serialNumber.toLowerCase(),
    notBefore: new Date(cert.valid_from),
    fingerprint: normalizeFingerprint(cert.fingerprint256),
  };
}

/**
 * When the certificate was issued, as far as ehrbench knows: the recorded issue time of a certificate
 * ehrbench issued for this principal (exactly this one: same bytes, issuer and serial); the validity
 * start of an external CA's certificate; undefined for any other, which is then refused.
 */
export async function issueTime(db: Queryable, peer: PeerIdentity, principalId: string, opts: IdentifyOptions): Promise<Date | undefined> {
  if (opts.externalIssuers.has(peer.issuerFingerprint)) return peer.notBefore;
  const record = await new IssuedCertificates(db).find(peer.fingerprint);
  const matches = record?.principal === principalId && record.issuerFingerprint === peer.issuerFingerprint && record.serial === peer.serial;
  return matches ? record.issuedAt : undefined;
}

/** True when the certificate, or every certificate of the principal issued until a blanket revocation, is revoked. */
export function isRevoked(db: Queryable, peer: PeerIdentity, issuedAt: Date, principalId: string): Promise<boolean> {
  return new Revocations(db).isRevoked({ issuerFingerprint: peer.issuerFingerprint, serial: peer.serial, issuedAt }, principalId);
}

export async function identify(app: App, socket: TLSSocket, opts: IdentifyOptions): Promise<IdentityResult> {
  const peer = peerIdentity(socket);
  if (!peer) return { ok: false, rule: 'identity.no-certificate', reason: 'a client certificate from a trusted CA is required' };
  const principal = app.principals().byCertificate(peer.commonName, peer.issuerFingerprint);
  if (!principal) return { ok: false, rule: 'identity.unknown-principal', reason: `certificate ${peer.commonName} is not mapped to an active principal`, peer };
  const issuedAt = await issueTime(app.db, peer, principal.id, opts);
  if (!issuedAt) {
    // After an upgrade from a release that kept no issuance records, the fix is record-existing; an
    // external CA is for CAs outside the site, never the site CA (it would turn off recorded issue times).
    const reason = `certificate ${peer.serial} of ${principal.id} has no issuance record: if it was issued before an upgrade, run "${commandPrefix()} pki record-existing" on the host; otherwise issue it with "${commandPrefix()} pki issue" (server.externalClientCaFiles is for CAs outside the site, never the site CA)`;
    return { ok: false, rule: 'identity.unknown-certificate', reason, peer, principal };
  }
  if (await isRevoked(app.db, peer, issuedAt, principal.id)) return { ok: false, rule: 'pki.certificate-revoked', reason: `certificate of ${principal.id} is revoked`, peer, principal };
  return { ok: true, principal, peer };
}
