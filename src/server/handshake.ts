/**
 * The daemon's TLS handshake refusals, made here so that they can be logged and counted. Node's own
 * refusal (`rejectUnauthorized: true`) destroys a socket whose client certificate does not verify
 * before any listener can see the certificate: nobody could tell that bob's certificate expired
 * yesterday. So the daemon requests a certificate without letting Node reject it (src/server/index.ts),
 * and the first `secureConnection` listener, installed here, destroys every socket whose certificate
 * the client CAs did not verify (expired, of another CA, none), before any HTTP byte is read from it.
 *
 * The refusal is logged with the certificate's common name, the fingerprint of the certificate that
 * issued it in the chain the handshake built (or, without one, the issuer's name), the client's address
 * and a reason from a closed set, never anything else of the certificate or the connection, and
 * counted in ehrbench_tls_handshake_refusals_total.
 *
 * An accepted socket may not renegotiate: a second TLS 1.2 handshake could present another
 * certificate on a socket already marked authorized. identify() (src/server/identity.ts) still checks
 * `socket.authorized` on every request.
 */
import type { Server as HttpsServer } from 'node:https';
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type { Logger } from '../log';
import { type HandshakeRefusalReason, observeHandshakeRefusal } from '../observability';
import { normalizeFingerprint } from './identity';
import { refusalLogger } from './refusal-log';

/** OpenSSL's verification results, as Node names them, to the reasons the daemon counts. */
const VERIFY_REASONS: Record<string, HandshakeRefusalReason> = {
  CERT_HAS_EXPIRED: 'expired',
  CERT_NOT_YET_VALID: 'not-yet-valid',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'unknown-ca',
  UNABLE_TO_GET_ISSUER_CERT: 'unknown-ca',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'unknown-ca',
  SELF_SIGNED_CERT_IN_CHAIN: 'unknown-ca',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'unknown-ca',
  CERT_UNTRUSTED: 'unknown-ca',
};

/** A name from a certificate nobody vouched for is shown only when it looks like a principal id or a CA name. */
const SHOWABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._@()-]{0,63}$/;
/** Codes are Node's or OpenSSL's: upper case, digits and underscores. */
const SAFE_CODE = /^[A-Z0-9_]{1,64}$/;

export interface HandshakeRefusal {
  reasonCode: HandshakeRefusalReason;
  errorCode?: string;
  commonName?: string;
  issuerFingerprint?: string;
  issuerName?: string;
  address: string;
}

export function firstName(value: string | string[] | undefined): string | undefined {
  const name = Array.isArray(value) ? value[0] : value;
  if (name === undefined) return undefined;
  return SHOWABLE_NAME.test(name) ? name : '(not shown)';
}

/** A peer's address as the log may hold it: an IPv4-mapped IPv6 address unwrapped, a zone id dropped. */
export function logAddress(remoteAddress: string | undefined): string {
  const address = (remoteAddress ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '').replace(/%.*$/, '');
  return /^[0-9A-Fa-f:.]{1,64}$/.test(address) ? address : 'unknown';
}

function addressOf(socket: TLSSocket): string {
  return logAddress(socket.remoteAddress);
}

/** What may be said of a certificate the client CAs did not verify. */
export function describeUnverified(socket: TLSSocket): HandshakeRefusal {
  const code = socket.authorizationError === null ? undefined : String(socket.authorizationError);
  const cert = socket.getPeerCertificate(true) as DetailedPeerCertificate | Record<string, never> | null;
  const address = addressOf(socket);
  const errorCode = code && SAFE_CODE.test(code) ? code : undefined;
  if (!cert || !('subject' in cert) || !cert.subject) return { reasonCode: 'no-certificate', ...(errorCode ? { errorCode } : {}), address };
  const issuer = cert.issuerCertificate;
  // Only a chain built to a trusted CA has an issuer certificate other than the leaf itself.
  const trustedIssuer = issuer && issuer.fingerprint256 !== cert.fingerprint256 ? normalizeFingerprint(issuer.fingerprint256) : undefined;
  const commonName = firstName(cert.subject.CN);
  const issuerName = firstName(cert.issuer?.CN);
  return {
    reasonCode: (code && VERIFY_REASONS[code]) || 'bad-certificate',
    ...(errorCode ? { errorCode } : {}),
    ...(commonName ? { commonName } : {}),
    ...(trustedIssuer ? { issuerFingerprint: trustedIssuer } : issuerName ? { issuerName } : {}),
    address,
  };
}

/** A handshake that failed before it completed: a timeout, a client that hung up, a protocol error. */
function describeFailure(err: NodeJS.ErrnoException, socket: TLSSocket): HandshakeRefusal {
  const code = typeof err.code === 'string' && SAFE_CODE.test(err.code) ? err.code : undefined;
  const reasonCode: HandshakeRefusalReason = code === 'ERR_TLS_HANDSHAKE_TIMEOUT' ? 'handshake-timeout' : code === 'ECONNRESET' ? 'handshake-aborted' : 'handshake-failed';
  return { reasonCode, ...(code ? { errorCode: code } : {}), address: addressOf(socket) };
}

/**
 * Installs the refusal on the daemon's HTTPS server (whose TLS options request a client certificate
 * and leave its rejection to this listener), and the logging and counting of failed handshakes.
 */
export function refuseUnverifiedClients(server: HttpsServer, logger: Logger): void {
  const logLine = refusalLogger(logger, 'server.tls-refused');
  const log = (refusal: HandshakeRefusal, level: 'warn' | 'info') => logLine(refusal.reasonCode, { ...refusal }, level);
  // First of all listeners: the HTTP layer has not seen this socket yet, and will read nothing from it.
  server.prependListener('secureConnection', (socket: TLSSocket) => {
    if (socket.authorized) {
      socket.disableRenegotiation();
      return;
    }
    // Described before it is destroyed (the certificate goes with the socket), destroyed whatever happens.
    let refusal: HandshakeRefusal = { reasonCode: 'bad-certificate', address: 'unknown' };
    try {
      refusal = describeUnverified(socket);
    } catch {
      // A certificate that cannot be described is refused all the same.
    } finally {
      socket.destroy();
    }
    observeHandshakeRefusal(refusal.reasonCode);
    log(refusal, 'warn');
  });
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
    const refusal = describeFailure(err, socket);
    observeHandshakeRefusal(refusal.reasonCode);
    log(refusal, 'info');
  });
}
