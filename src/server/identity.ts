/**
 * Who is calling: the client certificate the TLS handshake verified (against the configured client
 * CAs only), mapped to a principal by its common name and the fingerprint of the CA that issued it,
 * and refused if revoked. No certificate, an unknown one or a revoked one: no principal, no access.
 */
import type { TLSSocket } from 'node:tls';
import type { App } from '../app';
import type { Queryable } from '../db';
import { Revocations } from '../identity';
import type { Principal } from '../access';
import type { RuleId } from '../policy';

export interface PeerIdentity {
  commonName: string;
  issuerFingerprint: string;
  serial: string;
  notBefore: Date;
}

export type IdentityResult = { ok: true; principal: Principal; peer: PeerIdentity } | { ok: false; rule: RuleId; reason: string; peer?: PeerIdentity };

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
  };
}

/** True when the certificate, or every certificate of the principal issued before a blanket revocation, is revoked. */
export function isRevoked(db: Queryable, peer: PeerIdentity, principalId: string): Promise<boolean> {
  return new Revocations(db).isRevoked(peer, principalId);
}

export async function identify(app: App, socket: TLSSocket): Promise<IdentityResult> {
  const peer = peerIdentity(socket);
  if (!peer) return { ok: false, rule: 'identity.no-certificate', reason: 'a client certificate from a trusted CA is required' };
  const principal = app.principals().byCertificate(peer.commonName, peer.issuerFingerprint);
  if (!principal) return { ok: false, rule: 'identity.unknown-principal', reason: `certificate ${peer.commonName} is not mapped to an active principal`, peer };
  if (await isRevoked(app.db, peer, principal.id)) return { ok: false, rule: 'pki.certificate-revoked', reason: `certificate of ${principal.id} is revoked`, peer };
  return { ok: true, principal, peer };
}
