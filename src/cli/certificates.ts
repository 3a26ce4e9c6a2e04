/**
 * What the client can tell about a connection to the daemon from its own certificate files, so that
 * a certificate problem is not reported as a network failure. The daemon refuses an unverified client
 * certificate by closing the connection (TLS has no room for a reason the client could show), so the
 * client reads its own certificate: an expired one is refused before any connection, and when the
 * daemon closes the connection, a certificate that the CA given with --ca did not issue is named.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { UserError } from '../errors';

/** The client's certificate and the daemon's CA (--ca), read from their files. */
export interface ClientCertificates {
  certFile: string;
  cert: X509Certificate;
  caFile?: string;
  /** Every certificate of the CA file (it may hold a bundle). */
  cas: X509Certificate[];
}

/** Codes with which the client refuses the daemon's certificate chain (Node's names for OpenSSL's). */
const UNTRUSTED_DAEMON = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
/** Codes of a connection the daemon closed (where it refuses a client certificate). */
const CLOSED = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

const CA_HINT = "pass --ca <site CA file> (pki/ca.pem of the daemon's data directory, or EHRBENCH_CA)";

/** `2026-11-29 13:48 UTC` */
function day(text: string): string {
  return new Date(text).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** The issuer's common name, when it is printable (it comes from a file, not from us). */
function issuerName(cert: X509Certificate): string {
  const cn = /^CN=(.*)$/m.exec(cert.issuer)?.[1] ?? '';
  return /^[\p{L}\p{N} ._@()'-]{1,64}$/u.test(cn) ? cn : 'another CA';
}

function parseAll(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((block) => new X509Certificate(block));
}

/**
 * Reads the client's certificate and the CA file, and refuses a certificate that is not valid now:
 * the daemon would only close the connection.
 */
export function clientCertificates(certFile: string, certPem: string, ca?: { file: string; pem: string }, now = new Date()): ClientCertificates {
  let cert: X509Certificate | undefined;
  let cas: X509Certificate[];
  try {
    cert = parseAll(certPem)[0];
  } catch {
    cert = undefined;
  }
  if (!cert) throw new UserError('client.certificate-invalid', `${certFile}: not a PEM certificate; give your client certificate with --cert (the .pem file, not the key or the .p12)`);
  try {
    cas = ca ? parseAll(ca.pem) : [];
  } catch {
    cas = [];
  }
  if (ca && cas.length === 0) throw new UserError('client.certificate-invalid', `${ca.file}: not a PEM certificate; ${CA_HINT}`);
  if (new Date(cert.validTo) < now) throw new UserError('client.certificate-expired', `${certFile}: your certificate expired on ${day(cert.validTo)}; ask the site's IT for a new one`);
  if (new Date(cert.validFrom) > now) {
    throw new UserError('client.certificate-expired', `${certFile}: your certificate is valid only from ${day(cert.validFrom)}; check this computer's clock, or wait until then`);
  }
  return { certFile, cert, ...(ca ? { caFile: ca.file } : {}), cas };
}

/**
 * Refuses a key that is not the certificate's before any connection: TLS would fail inside the
 * connection and the failure read as "cannot reach the daemon", sending people to check the network.
 */
export function assertKeyMatches(certs: ClientCertificates, keyFile: string, keyPem: string): void {
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw new UserError('client.certificate-invalid', `${keyFile}: cannot be read as a private key (encrypted, or damaged); give the unencrypted .key.pem that goes with --cert`);
  }
  if (!certs.cert.checkPrivateKey(key)) {
    throw new UserError('client.certificate-invalid', `${keyFile} is not the key of ${certs.certFile}; give the .key.pem made with that certificate (or the certificate issued for this key)`);
  }
}

const issuedBy = (cert: X509Certificate, cas: X509Certificate[]) => cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey));

/**
 * Why a connection to the daemon failed, when the certificates say so: the daemon's certificate is
 * not trusted (no --ca, or the wrong one), has expired or does not name the host; or the daemon closed
 * the connection and the client's certificate is not of the CA given with --ca. Otherwise undefined.
 */
export function certificateProblem(code: string | undefined, server: string, certs: ClientCertificates): UserError | undefined {
  if (code && UNTRUSTED_DAEMON.has(code)) {
    return new UserError(
      'client.daemon-untrusted',
      certs.caFile ? `${certs.caFile}: the daemon's certificate at ${server} is not issued by this CA: ${CA_HINT}` : `the daemon's certificate at ${server} is not trusted: ${CA_HINT}`,
    );
  }
  if (code === 'CERT_HAS_EXPIRED') return new UserError('client.daemon-untrusted', `the daemon's certificate at ${server} has expired; tell the site's IT`);
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return new UserError('client.daemon-untrusted', `the daemon's certificate does not name the host of ${server}; use the name the daemon's certificate was issued for in --server`);
  }
  if (code && CLOSED.has(code) && certs.cas.length > 0 && !issuedBy(certs.cert, certs.cas)) {
    return new UserError(
      'client.certificate-foreign-ca',
      `${certs.certFile}: your certificate is not issued by this site's CA (${issuerName(certs.cert)}); use the certificate the site issued you, or ask the site's IT for one`,
    );
  }
  return undefined;
}
